"""The NPU C++ wrapper out of device memory: the real wrapper on the simulated NPU against the stub libtorch_npu and the
emulated ACL (a device memory limit), on each of the two paths a launch's scratch takes."""

# The decision (npu_launch_runtime.h, Scratch): in torch_npu's task queue the scratch comes from torch_npu's per-stream
# workspace block, which torch_npu grows without freeing any cache (NPUWorkspaceAllocator.cpp); on the calling thread
# from its caching allocator, which frees its cache and the workspace blocks and retries once (NPUCachingAllocator.cpp).
# Out of memory either way the launch stops, naming the kernel and the size; it never runs on memory freed for it.

from __future__ import annotations

from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download, pytest.mark.once]

PER_BLOCK = 4096  # workspace bytes per block: a call of 4096 elements takes 256 KiB and 2 MiB of scratch
SCENARIOS = [{"workspace_size": PER_BLOCK}]
TWO_MIB = 2 << 20


def _plan(*phases: dict[str, Any]) -> dict[str, Any]:
    return {"scenarios": SCENARIOS, "cores": harness.PLAN_CORES, "phases": list(phases)}


def test_on_the_calling_thread_the_cache_is_freed_and_the_request_retried_then_the_kernel_named(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """Queue off. A first call of 64 elements leaves its scratch blocks in the caching allocator's cache; with the
    device then holding just over what a call of 4096 needs at once (256 KiB + 2 MiB), its 2 MiB request fails until
    the cache is freed, and the call completes. A call of 8192 on a device of 4 MiB (its 4 MiB block and the cached
    ones past it) fails again after the retry: an out-of-memory error naming the kernel, the bytes and the
    allocator, with torch_npu's message (c10::OutOfMemoryError in C++, a RuntimeError past Inductor's wrapper)."""
    enough = (256 << 10) + TWO_MIB + 128
    plan = _plan(
        {"device": 0, "sizes": [64]},
        {"device": 0, "sizes": [4096], "memory": enough},
        {"device": 0, "sizes": [8192], "memory": 4 << 20},
    )
    found = harness.run_plan(emulated_npu, plan, tmp_path, {"TASK_QUEUE_ENABLE": "0"})
    assert [call["n"] for call in found["calls"]] == [64, 4096], found["errors"]
    assert found["report"]["calls"].get("aclrtFree", 0) >= 1, found["report"]["calls"]  # the cache was freed
    assert found["report"]["hazards"] == [], found["report"]["hazards"][:5]
    (error,) = found["errors"]
    assert error["n"] == 8192 and error["type"] == "RuntimeError", error  # as Inductor raises every C++ error
    message = error["message"]
    assert message.startswith("NPU kernel triton_"), error
    named = "-byte workspace and sync-block locks (torch_npu's caching allocator): NPU out of memory. Tried to allocate"
    assert f"{named} 4.00 MiB" in message, error


def test_in_the_task_queue_a_block_that_cannot_grow_stops_the_launch_reported_at_the_next_synchronisation(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """Queue on. torch_npu's per-stream block cannot grow to the 2 MiB a call of 4096 needs: torch_npu's workspace
    allocator raises out-of-memory, the launch stops naming the kernel (logged, as torch_npu logs an exception in
    queued work) and the next synchronisation raises torch_npu's queue error naming the kernel. Nothing ran."""
    found = harness.run_plan(emulated_npu, _plan({"device": 0, "sizes": [4096], "memory": 1 << 20}), tmp_path)
    (error,) = found["errors"]
    assert error["message"].startswith("The Inner error is reported as above."), error
    assert "current working operator name is triton_" in error["message"], error
    logged = "-byte workspace and sync-block locks (torch_npu's per-stream workspace block): NPU out of memory. "
    assert logged + "NPUWorkspaceAllocator tried to allocate" in found["stderr"], found["stderr"][-3000:]
    assert found["report"]["hazards"] == [], found["report"]["hazards"][:5]
