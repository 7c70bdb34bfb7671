"""Record cpp-wrapper-optional-list-args through `codegen --cpp-wrapper` on the simulated NPU: a C++ wrapper that calls
an op through Python with an optional int list (a custom op here; under torch_npu's codegen every aten op, such as a
convolution's gradient). The default run, every record on, matches eager: tests/tools/execution/test_execute_cpp.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import TESTS

from npu_inductor_compat.common.fixes.cpp_wrapper_optional_lists import OPTIONAL_LIST_ARGS

SCRIPT = TESTS / "scripts" / "conv_and_fused_attention.py"


@pytest.mark.subprocess
def test_without_its_record_an_optional_int_list_stops_the_cpp_wrapper(tmp_path: Path) -> None:
    assert OPTIONAL_LIST_ARGS.upstream_has_fix is not None
    if OPTIONAL_LIST_ARGS.upstream_has_fix():
        pytest.skip("torch builds optional list arguments from 2.12: the record is needed on torch 2.7.x-2.11.x only")
    flags = ("--cpp-wrapper", "--without-fix", OPTIONAL_LIST_ARGS.id)
    run = run_codegen(SCRIPT, *flags, out=tmp_path / "o", provider=None)  # the default provider
    assert run.returncode == 1 and run.summary is not None, run.stderr[-3000:]
    forward = run.summary["graphs"][0]
    assert forward["status"] == "error", forward
    assert "arg type List[int] is not yet supported by custom_op_wrapper" in forward["error"]["message"]


def test_the_probe_sees_what_the_generator_does() -> None:
    """The record's probe and the real generator agree: where the probe says "not needed", an optional int list
    becomes a Python list in the generated C++; where it says "needed", the generator refuses it."""
    import torch
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    assert OPTIONAL_LIST_ARGS.upstream_has_fix is not None
    optional_ints = torch.OptionalType(torch.ListType(torch.IntType.get()))
    if OPTIONAL_LIST_ARGS.upstream_has_fix():
        text = CppWrapperCpu.generate_py_arg(object.__new__(CppWrapperCpu), "py_args", 1, [3, 4], optional_ints)
        assert "PyList_New(2)" in text and "PyLong_FromLongLong(4)" in text
    else:
        with pytest.raises(NotImplementedError, match="List\\[int\\]"):
            CppWrapperCpu.generate_py_arg(object.__new__(CppWrapperCpu), "py_args", 1, [3, 4], optional_ints)
