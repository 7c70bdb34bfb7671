"""torch.npu's device functions on the simulated NPU: availability, device selection and what a device reports."""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import torch

from npu_inductor_compat.tools.simulated.npu import device_state
from npu_inductor_compat.tools.simulated.npu.device_properties import (
    SimulatedNpuProperties,
    current_properties,
    current_soc,
)
from npu_inductor_compat.tools.simulated.npu.device_state import DEVICE, DEVICE_COUNT

__all__ = [
    "API",
    "CAPABILITY_ENV",
    "cpu_fallback_counts",
    "current_device",
    "device",
    "device_count",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_soc_version",
    "index_of",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "set_device",
    "synchronize",
]


def index_of(device: Any = None, *, optional: bool = True) -> int:
    """Index of an "npu" device given as None (the current one), an int, "npu" / "npu:N", or a torch.device."""
    if device is None:
        if not optional:
            raise ValueError("npu_inductor_compat: a device is required")
        return current_device()
    index: int | None
    if isinstance(device, torch.device):
        if device.type != DEVICE:
            raise ValueError(f"npu_inductor_compat: expected an {DEVICE} device, got {device}")
        index = device.index
    elif isinstance(device, str):
        kind, _, number = device.partition(":")
        if kind != DEVICE:
            raise ValueError(f"npu_inductor_compat: expected an {DEVICE} device, got {device!r}")
        index = int(number) if number else None
    elif isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        raise TypeError(f"npu_inductor_compat: cannot read a device index from {device!r}")
    if index is None or index == -1:
        return current_device()
    if not 0 <= index < DEVICE_COUNT:
        raise ValueError(
            f"npu_inductor_compat: invalid {DEVICE} device index {index} (the simulated NPU has {DEVICE_COUNT})"
        )
    return index


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return device_state.instance() is not None


def _lazy_init() -> None:
    device_state.ensure()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return DEVICE_COUNT


def current_device() -> int:
    return int(device_state.ensure().extension.current_device())


def set_device(device: Any) -> None:
    device_state.ensure().extension.set_device(index_of(device, optional=False))


def _exchange_device(device: int) -> int:
    previous = current_device()
    if device >= 0:
        set_device(device)
    return previous


def _maybe_exchange_device(device: int) -> int:
    return _exchange_device(device)


def synchronize(device: Any = None) -> None:
    index_of(device)  # work is synchronous: nothing to wait for


class device:
    """Context manager selecting an "npu" device for the block."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else index_of(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        self.idx = _maybe_exchange_device(self.prev_idx)


def get_device_properties(device: Any = None) -> SimulatedNpuProperties:
    index_of(device)
    return current_properties()


def get_device_name(device: Any = None) -> str:
    """The SoC name, as torch_npu's (torch_npu/npu/__init__.py get_device_name: aclrtGetSocName)."""
    return get_device_properties(device).name


CAPABILITY_ENV = "TORCH_NPU_DEVICE_CAPABILITY"  # torch_npu's own variable, "major.minor"


def get_device_capability(device: Any = None) -> tuple[int, int] | None:
    """As torch_npu's (torch_npu/npu/__init__.py get_device_capability): an NPU has no CUDA compute capability, so
    this is None unless $TORCH_NPU_DEVICE_CAPABILITY says "major.minor" (then that pair), with a warning either
    way that the answer is for compatibility only."""
    index_of(device)
    text = os.environ.get(CAPABILITY_ENV, "")
    found = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not found:
        why = f"{CAPABILITY_ENV}={text!r} is not 'major.minor'" if text else f"{CAPABILITY_ENV} is not set"
        warnings.warn(
            f"torch.npu.get_device_capability(): {why}, so there is none (None); an NPU has no CUDA capability "
            "(simulated NPU, as torch_npu)",
            stacklevel=2,
        )
        return None
    return int(found.group(1)), int(found.group(2))


def get_soc_version() -> int:
    """torch_npu's number for the SoC (torch_npu/npu/_backends.py get_soc_version; NpuVariables.h SocVersion)."""
    return current_soc().soc_version


# torch_npu/csrc/core/npu/NpuVariables.cpp IsBF16Supported: GetSocVersion() >= SocVersion::Ascend910B1.
_BF16_FROM_SOC_VERSION = 220


def is_bf16_supported(including_emulation: bool = False) -> bool:
    return current_soc().soc_version >= _BF16_FROM_SOC_VERSION


def get_amp_supported_dtype() -> list[torch.dtype]:
    # torch_npu/npu/autocast_utils.py get_amp_supported_dtype
    if is_bf16_supported():
        return [torch.float16, torch.bfloat16, torch.float32]
    return [torch.float16, torch.float32]


def cpu_fallback_counts(reset: bool = False) -> dict[str, int]:
    """Calls per operator ("aten::addmm", "aten::add.Tensor") that ran on the CPU through the extension's fallback
    (no npu kernel of their own) since the last reset; ``reset`` starts counting afresh."""
    return {name: int(count) for name, count in device_state.ensure().extension.fallback_counts(reset).items()}


def _get_current_raw_stream(device_index: int) -> int:
    """Raw handle of the current stream (generated wrappers import it as ``get_raw_stream``): always 0."""
    return int(device_state.ensure().extension.current_raw_stream(device_index))


# What torch.npu gets from this module (device.py builds torch.npu), each under its own name.
API = (
    is_available,
    is_initialized,
    _lazy_init,
    _is_in_bad_fork,
    device_count,
    current_device,
    set_device,
    _exchange_device,
    _maybe_exchange_device,
    synchronize,
    device,
    get_device_properties,
    get_device_name,
    get_device_capability,
    get_soc_version,
    is_bf16_supported,
    get_amp_supported_dtype,
    _get_current_raw_stream,
)
