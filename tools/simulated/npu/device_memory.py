"""torch.npu's memory queries on the simulated NPU: one count of live host memory for both devices, no cache."""

# One host-memory allocator counts the live bytes of every simulated device together (device_ext.cpp), so these
# answer for the process whichever device is asked; nothing is cached, so reserved memory is allocated memory.
# The extension keeps one all-time peak: after reset_peak_memory_stats, a new peak is exact once it exceeds the
# peak before the reset, and below that it is the highest value seen by these queries since the reset.

from __future__ import annotations

import warnings
from typing import Any

from npu_inductor_compat.tools.simulated.npu import device_state
from npu_inductor_compat.tools.simulated.npu.device_api import get_device_properties, index_of

__all__ = [
    "API",
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]

_peak_reset: list[int] = []  # [all-time peak at the last reset, highest value observed since]


def _live_and_peak() -> tuple[int, int]:
    instance = device_state.instance()
    if instance is None:
        return 0, 0
    live = int(instance.extension.memory_allocated())
    peak = int(instance.extension.max_memory_allocated())
    with device_state.lock:
        if _peak_reset:
            _peak_reset[1] = max(_peak_reset[1], live)
            if peak <= _peak_reset[0]:
                peak = _peak_reset[1]
    return live, peak


def memory_allocated(device: Any = None) -> int:
    index_of(device)
    return _live_and_peak()[0]


def max_memory_allocated(device: Any = None) -> int:
    index_of(device)
    return _live_and_peak()[1]


def memory_reserved(device: Any = None) -> int:
    return memory_allocated(device)


def max_memory_reserved(device: Any = None) -> int:
    return max_memory_allocated(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    index_of(device)
    live, _ = _live_and_peak()
    instance = device_state.instance()
    all_time = int(instance.extension.max_memory_allocated()) if instance is not None else 0
    with device_state.lock:
        _peak_reset[:] = [all_time, live]


def reset_max_memory_allocated(device: Any = None) -> None:
    # torch_npu/npu/memory.py: deprecated, resets every peak statistic
    warnings.warn(
        "torch.npu.reset_max_memory_allocated resets every peak memory statistic (reset_peak_memory_stats)",
        DeprecationWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes: total is the SoC's memory, free what the simulated tensors leave of it."""
    total = get_device_properties(device).total_memory
    return max(total - memory_allocated(device), 0), total


def memory_stats(device: Any = None) -> dict[str, int]:
    """The byte counters of torch_npu's memory_stats (torch_npu/npu/memory.py: "allocated_bytes.all.current", ...),
    flat and sorted like torch_npu's; per-pool, block and segment counts are not simulated."""
    index_of(device)
    live, peak = _live_and_peak()
    stats = {"num_alloc_retries": 0, "num_ooms": 0}
    for kind in ("active_bytes", "allocated_bytes", "reserved_bytes"):
        stats[f"{kind}.all.current"] = live
        stats[f"{kind}.all.peak"] = peak
    return dict(sorted(stats.items()))


def empty_cache() -> None:
    """Nothing is cached: freed tensors return their memory at once."""


# What torch.npu gets from this module (device.py builds torch.npu), each under its own name.
API = (
    memory_allocated,
    max_memory_allocated,
    memory_reserved,
    max_memory_reserved,
    reset_peak_memory_stats,
    reset_max_memory_allocated,
    mem_get_info,
    memory_stats,
    empty_cache,
)
