"""`codegen --cpp-wrapper --execute` as a user runs it: the C++ wrapper Inductor (or torch_npu) generated, built and
linked against the emulated NPU runtime, called, each kernel run from its packed arguments, judged against eager."""

# There is no NPU here, so the wrapper runs one level below it: compiled with this package's build options for
# "npu" against the tool's stub libtorch_npu and emulated ACL (tools/simulated/execution, each part modelled on the
# real source it cites, built against the real headers of the torch_npu wheel paired with this torch). Each launch
# goes through the stub's task queue to an emulated stream; when the device is synchronised the emulated device reads
# the packed argument struct by triton-ascend's launcher layout and runs the kernel in Triton's interpreter on the
# memory the struct points at. The code is real generated code: torch_npu's own codegen where this torch has a paired
# release (the default), and Inductor's own codegen planted with a wrong sigmoid (tests/scripts).

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import TESTS

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]


def test_the_cpp_wrapper_of_a_forward_and_its_backward_runs_and_matches_eager(tmp_path: Path) -> None:
    """The default provider's C++ wrappers (torch_npu's codegen on a paired torch, whose intermediate buffers the
    wrapper frees before its launches have run: the caching allocator's stream order kept them) compute what eager
    computes, through a convolution and its gradient (C-shim ops), torch_npu's fused attention (it also returns
    numbers: record cpp-wrapper-scalar-returns), an op called through Python with an optional int list (record
    cpp-wrapper-optional-list-args) and, under torch_npu 2.7.1's codegen, a dropout kernel whose seed offset of 1 is
    a call-site constexpr: the params saved for the wrapper lack its value, the wrapper's calls carry it
    (call_site_constants.py; without it that kernel cannot run)."""
    import torch

    script = TESTS / "scripts" / "conv_and_fused_attention.py"
    run = run_codegen(script, "--cpp-wrapper", "--execute", out=tmp_path / "o", provider=None)  # the default
    assert run.returncode == 0 and run.summary is not None, run.stderr[-3000:]
    if torch.__version__.startswith("2.7."):
        kernels = (tmp_path / "o" / "graph_0" / "kernels").glob("*dropout*.py")
        assert any(re.search(r"'load_seed_offset\d*': 'constexpr'", path.read_text()) for path in kernels)
    graphs = run.summary["graphs"]
    assert [graph["wrapper"] for graph in graphs] == ["cpp", "cpp"], run.stderr[-3000:]
    for graph in graphs:
        execution = graph["execution"]
        assert execution["status"] == "match", execution
        assert execution["launches"] >= 1 and all(k["status"] == "match" for k in execution["kernels"].values())
        assert [value["status"] for value in execution["values"]].count("match") >= 1, execution["values"]
    assert run.summary["execution"]["graphs"] == {"match": 2, "mismatch": 0, "error": 0, "not run": 0}


@pytest.mark.once  # the plant is in Inductor's Triton codegen; the C++ path that runs it is this package's
def test_a_wrong_kernel_in_a_cpp_wrapper_is_a_mismatch_and_the_run_exits_1(tmp_path: Path) -> None:
    """Shown able to fail: every sigmoid Inductor emits is wrong by +1; run from its packed arguments, the kernel
    writes the wrong values, and the graph's output says so (the C++ wrapper's buffers are not compared kernel by
    kernel, and the report says that instead of naming a kernel)."""
    script = TESTS / "scripts" / "planted_wrong_sigmoid.py"
    run = run_codegen(script, "--cpp-wrapper", "--execute", out=tmp_path / "o", provider="stock")
    assert run.returncode == 1 and run.summary is not None, run.stderr[-3000:]
    (graph,) = run.summary["graphs"]
    execution = graph["execution"]
    assert graph["wrapper"] == "cpp" and execution["status"] == "mismatch", execution
    assert [value["status"] for value in execution["values"]] == ["mismatch"], execution["values"]
    assert execution["launches"] == 3 and "not compared kernel by kernel" in execution["localised"]
    assert "graph 0: output 0 (mul):" in run.stderr, run.stderr[-3000:]  # what differs, said last


def test_the_stub_exports_only_the_c_shim_functions_the_paired_torch_npu_declares(emulated_npu: Any) -> None:
    """A wrapper that calls a C-shim function the real torch_npu lacks must fail to load here too: every
    aoti_torch_npu_ symbol the stub exports is declared by the paired wheel's c_shim_npu.h (hand-written ones included:
    torch_npu 2.12.0.post3 has no gather), and the ones torch's CPU shim shares are all there."""
    from npu_inductor_compat.tools.simulated.execution import shim_forwarding

    runtime = emulated_npu.runtime
    declared = shim_forwarding.declarations(
        (runtime.torch_npu_home / "include" / shim_forwarding.NPU_HEADER).read_text(), "npu"
    )
    prefix = "aoti_torch_npu_"
    defined = harness.symbols(runtime.libtorch_npu, defined=True)
    exported = {name.removeprefix(prefix) for name in defined if name.startswith(prefix)}
    assert exported and exported <= set(declared), sorted(exported - set(declared))
    assert {"convolution", "convolution_backward", "mm_out", "addmm_out"} <= exported
