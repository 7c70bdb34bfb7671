"""Record cpp-wrapper-scalar-returns through `codegen --cpp-wrapper` on the simulated NPU: a training step calling
torch_npu's fused attention, which returns three numbers besides its tensors (the default run, with every record,
compiles and matches eager: tests/tools/execution/test_execute_cpp.py)."""

# Without it, torch 2.7 stops generating the C++ wrapper; from 2.8 the wrapper is generated, then cannot compile
# (a number declared as a tensor handle): g++ -fsyntax-only against torch's and the paired torch_npu wheel's real
# headers (codegen --check-headers) says so at the first line, where a full build takes tens of seconds to fail.

from __future__ import annotations

from pathlib import Path

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import TESTS

from npu_inductor_compat.common.fixes.cpp_wrapper_scalar_returns import SCALAR_RETURNS

SCRIPT = TESTS / "scripts" / "conv_and_fused_attention.py"

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]


def test_without_its_record_a_cpp_wrapper_of_npu_fusion_attention_is_not_built(tmp_path: Path) -> None:
    flags = ("--cpp-wrapper", "--check-headers", "--without-fix", SCALAR_RETURNS.id)
    run = run_codegen(SCRIPT, *flags, out=tmp_path / "o", provider=None)  # the default provider
    assert run.returncode == 1 and run.summary is not None, run.stderr[-3000:]
    forward = run.summary["graphs"][0]
    if forward["status"] == "error":  # torch 2.7: no wrapper
        assert "Unexpected output: <class 'int'>" in forward["error"]["message"], forward
    else:
        assert "error: expected unqualified-id before numeric constant" in forward["header_check"], forward
        wrapper = (tmp_path / "o" / "graph_0" / "wrapper.cpp").read_text()
        assert "RAIIAtenTensorHandle 0;" in wrapper  # numels, seed and offset declared as tensor handles
