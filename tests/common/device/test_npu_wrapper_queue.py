"""The NPU C++ wrapper through torch_npu's task queue and under aclgraph capture, on the simulated NPU against a stub
libtorch_npu (queue: OpCommand.cpp, NPUQueue.cpp; capture: NPUGraphsUtils.cpp) and an emulated libascendcl, one level
below the NPU (see test_npu_wrapper_run.py; several host threads: test_npu_wrapper_threads.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

SCENARIOS = harness.SCENARIOS
_run_plan = harness.run_plan


# ---------------------------------------------------------------------------------------------- the task queue
def _mm_plan(**options: Any) -> dict[str, Any]:
    return {"graph": "mm", "scenarios": [SCENARIOS[0]], "cores": harness.PLAN_CORES, "calls": 2, **options}


def _kernels_around_the_product(order: list[str]) -> list[str]:
    return ["launch" if item.startswith("launch triton_") else item.split()[0] for item in order]


def test_a_torch_npu_op_between_two_kernels_reaches_the_stream_in_program_order(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """A Triton kernel, torch_npu's matmul through its C shim (queued work, as op-plugin issues it), a Triton kernel,
    with the queue's consumer not scheduled until the call has returned: each launch goes through the same queue, so
    the stream runs them in program order and the second kernel is given the product after it was written (at
    TASK_QUEUE_ENABLE=2 too: the workspace test below)."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True), tmp_path)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert call["hazards"] == [], call["hazards"]


def test_with_the_queue_off_the_order_is_the_same(emulated_npu: Any, tmp_path: Path) -> None:
    """ASCEND_LAUNCH_BLOCKING=1 turns the queue off whatever TASK_QUEUE_ENABLE says (OptionsManager.cpp): every
    launch and the product run on the calling thread, in program order (TASK_QUEUE_ENABLE=0: the threads below)."""
    env = {"TASK_QUEUE_ENABLE": "2", "ASCEND_LAUNCH_BLOCKING": "1"}
    found = _run_plan(emulated_npu, _mm_plan(), tmp_path, env)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert call["hazards"] == [], call["hazards"]


def test_a_stream_the_user_selects_gets_every_launch_and_the_product(emulated_npu: Any, tmp_path: Path) -> None:
    """With another stream than the default one selected on the calling thread (torch_npu: thread-local, per
    device), the wrapper takes it at the call and every kernel, its scratch and the product go there, in program
    order (one queue per device, whatever the stream: torch_npu without PER_STREAM_QUEUE)."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True, stream=1), tmp_path)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert all(item.endswith(" on device 0 stream 1") for item in call["order"]), call["order"]
        assert call["hazards"] == [], call["hazards"]


@pytest.mark.once  # the launch of that time is this package's text, the same on every torch line
def test_the_ordering_test_fails_against_the_launch_straight_onto_the_stream(emulated_npu: Any, tmp_path: Path) -> None:
    """Shown able to fail: the launch as this package generated it before (from the calling thread, straight onto
    the stream) overtakes the queued product: the second kernel runs before the product and reads what it has not
    written yet. (ASCEND_LAUNCH_BLOCKING=0 leaves the queue on, as OptionsManager.cpp reads it.)"""
    plan = _mm_plan(hold_queue=True, launch="direct")
    found = _run_plan(emulated_npu, plan, tmp_path, {"ASCEND_LAUNCH_BLOCKING": "0"})
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "launch", "callback"], call["order"]
        assert any("reads memory aclnnMm (issued before it) has not written yet" in h for h in call["hazards"])


# the first kernel takes no scratch, the second more workspace than the product's block holds: its request grows it
GROW = [{}, {"workspace_size": 4 << 20}]


@pytest.mark.parametrize("launch", ["queued", pytest.param("direct", marks=pytest.mark.once)])  # once: as above
def test_the_workspace_block_grows_under_the_queue_never_under_the_product(
    emulated_npu: Any, tmp_path: Path, launch: str
) -> None:
    """torch_npu's workspace allocator frees its per-stream block when a larger request grows it
    (NPUWorkspaceAllocator.cpp: synchronise the device, which waits for the stream but not for the task queue, then
    free). At TASK_QUEUE_ENABLE=2 the product takes its workspace from that block inside its queued work; held there
    until the call has returned, it still holds the block when the second kernel's larger request comes. Queued too,
    that request waits behind the product, whose use of the block is on the stream by then. Shown able to fail: the
    launch straight from the calling thread grows the block under the queued product, which then uses freed memory."""
    plan = _mm_plan(calls=1, gate_mm=True, scenarios=GROW, **({"launch": "direct"} if launch == "direct" else {}))
    (call,) = _run_plan(emulated_npu, plan, tmp_path, {"TASK_QUEUE_ENABLE": "2"})["calls"]
    assert call["acl"].get("aclrtFree", 0) >= 1, call["acl"]  # the block grew: its old memory was freed
    assert call["errors"] == [], call["errors"]
    freed = [hazard for hazard in call["hazards"] if hazard.startswith("aclnnMm's workspace uses freed device memory")]
    if launch == "queued":
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert call["hazards"] == [], call["hazards"]
    else:  # the second kernel also overtakes the product
        assert _kernels_around_the_product(call["order"]) == ["launch", "launch", "callback"], call["order"]
        assert freed, call["hazards"]


def test_an_acl_error_in_queued_work_surfaces_at_the_next_drain_naming_the_kernel(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """As torch_npu's queue reports it (NPUQueue.cpp, OpParamMaker.cpp ExecFuncOpApi): the call returns (the launch is
    only queued), the failing entry puts the queue in its error state, and the next drain (here the device
    synchronisation) raises torch_npu's text naming the operator, with ACL's recent error message; the launch's own
    exception, which names the failed ACL call, is only logged."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True, calls=1, fail="aclrtLaunchKernelWithHostArgs"), tmp_path)
    (call,) = found["calls"]
    (error,) = call["errors"]
    assert error["at"] == "synchronize", error
    message = error["message"]
    assert message.startswith("The Inner error is reported as above."), error
    assert "current working operator name is triton_poi_fused_add_sin_0." in message, error
    assert "ERR00100 PTA call acl api failed" in message and "EE9999: Inner Error!" in message, error
    assert "NPU kernel" not in message, error  # on hardware the exception's text is not in the raised error
    logged = "NPU kernel triton_poi_fused_add_sin_0: aclrtLaunchKernelWithHostArgs failed with ACL error 507899"
    assert logged in found["stderr"], found["stderr"][-3000:]
    assert call["order"] == [], call["order"]  # the rest of the queue was dropped, as torch_npu drops it


# ---------------------------------------------------------------------------------------------- aclgraph capture
SCRATCH = harness.SCENARIOS[0]  # workspace and lock_num locks
NEITHER = {"mix_mode": "aiv"}  # no workspace, no locks


def _capture_plan(scenarios: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return {
        "graph": "mm",
        "scenarios": scenarios,
        "cores": harness.PLAN_CORES,
        "calls": 1,
        "capturing": True,
        **options,
    }


@pytest.fixture(scope="session")
def capturing_npu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The emulated runtime with aclmdlRICaptureGetInfo, as a CANN with aclgraph capture has it."""
    return harness.build_emulated_npu(tmp_path_factory, capture=True)


@pytest.mark.once  # the decision is the launch runtime's and torch_npu's answer, the same on every torch line
def test_a_capture_is_refused_only_for_a_launch_that_takes_workspace_or_locks(
    capturing_npu: Any, tmp_path: Path
) -> None:
    """Workspace and locks come from torch_npu's per-stream block, which a later launch may free under a captured
    graph: that launch is refused at the call, naming the kernel and what it takes; the kernel before it, which takes
    neither, is launched (it captures as any kernel would)."""
    found = harness.run_plan(capturing_npu, _capture_plan([NEITHER, SCRATCH]), tmp_path)
    (call,) = found["calls"]
    (error,) = call["errors"]
    assert error["at"] == "call", error
    prefix = "NPU kernel triton_poi_fused_cos_1: the stream is being captured into an aclgraph, and this launch takes "
    assert error["message"].startswith(prefix + "its workspace and sync-block locks from torch_npu's"), error
    assert "cpp_wrapper" in error["message"], error
    assert call["order"][:1] == ["launch triton_poi_fused_add_sin_0 on device 0"], call["order"]
    assert call["acl"]["aclmdlRICaptureGetInfo"] == 1 and call["hazards"] == [], call


@pytest.mark.once
def test_a_soc_without_capture_is_never_asked(capturing_npu: Any, tmp_path: Path) -> None:
    """On an Ascend910A torch_npu answers "not capturing" without asking ACL (IsCaptureSupported): the launches taking
    workspace and locks go ahead, and aclmdlRICaptureGetInfo is never called."""
    found = harness.run_plan(capturing_npu, _capture_plan([SCRATCH], soc="Ascend910A"), tmp_path)
    (call,) = found["calls"]
    assert call["errors"] == [] and call["hazards"] == [], call
    assert call["acl"].get("aclmdlRICaptureGetInfo", 0) == 0, call["acl"]
    assert [item.split()[0] for item in call["order"]] == ["launch", "callback", "launch"], call["order"]
