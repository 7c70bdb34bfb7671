"""The NPU C++ wrapper under aclgraph capture, asked as torch_npu asks it: the real wrapper on the simulated NPU against
the stub libtorch_npu (its capture answer from NPUGraphsUtils.cpp and AclInterface.cpp) and the emulated ACL, one
level below the NPU (see test_npu_wrapper_run.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

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


def test_a_capture_is_refused_only_for_a_launch_that_takes_workspace_or_locks(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """Workspace and locks come from torch_npu's per-stream block, which a later launch may free under a captured
    graph: that launch is refused at the call, naming the kernel and what it takes; the kernel before it, which takes
    neither, is launched (it captures as any kernel would)."""
    found = harness.run_plan(emulated_npu, _capture_plan([NEITHER, SCRATCH]), tmp_path)
    (call,) = found["calls"]
    (error,) = call["errors"]
    assert error["at"] == "call", error
    prefix = "NPU kernel triton_poi_fused_cos_1: the stream is being captured into an aclgraph, and this launch takes "
    assert error["message"].startswith(prefix + "its workspace and sync-block locks from torch_npu's"), error
    assert "cpp_wrapper" in error["message"], error
    assert call["order"][:1] == ["launch triton_poi_fused_add_sin_0 on device 0"], call["order"]
    assert call["acl"]["aclmdlRICaptureGetInfo"] == 1 and call["hazards"] == [], call


@pytest.mark.once
def test_a_soc_without_capture_is_never_asked(emulated_npu: Any, tmp_path: Path) -> None:
    """On an Ascend910A torch_npu answers "not capturing" without asking ACL (IsCaptureSupported): the launches taking
    workspace and locks go ahead, and aclmdlRICaptureGetInfo is never called."""
    found = harness.run_plan(emulated_npu, _capture_plan([SCRATCH], soc="Ascend910A"), tmp_path)
    (call,) = found["calls"]
    assert call["errors"] == [] and call["hazards"] == [], call
    assert call["acl"].get("aclmdlRICaptureGetInfo", 0) == 0, call["acl"]
    assert [item.split()[0] for item in call["order"]] == ["launch", "callback", "launch"], call["order"]


@pytest.fixture(scope="module")
def without_capture(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return harness.build_emulated_npu(tmp_path_factory.mktemp("without_capture"), capture=False)


@pytest.mark.once
def test_a_cann_without_the_capture_query_loads_and_launches(without_capture: Any, tmp_path: Path) -> None:
    """Shown able to fail: a wrapper linking aclmdlRICaptureGetInfo does not load where ACL lacks it (as this package
    generated it before); asked through torch_npu, which looks the function up at run time, it loads and launches."""
    found = harness.run_plan(without_capture, _capture_plan([SCRATCH]), tmp_path)
    (call,) = found["calls"]
    assert call["errors"] == [] and call["hazards"] == [], call
    assert [item.split()[0] for item in call["order"]] == ["launch", "callback", "launch"], call["order"]
