"""Record cpp-wrapper-optional-list-args: a C++ wrapper that calls an op through Python with an optional list argument
(convolution_backward's bias_sizes; torch_npu sends every aten op that way) fails to generate before torch 2.12."""

# torch/_inductor/codegen/cpp_wrapper_cpu.py, generate_py_arg: before 2.12 a list is built only for a list-typed
# argument; an Optional[List[int]] goes to the scalar path, which raises "arg type List[int] is not yet supported by
# custom_op_wrapper". torch 2.12 builds the list for a present optional list too (None stays Py_None); so does this.

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

TARGET = "torch._inductor.codegen.cpp_wrapper_cpu:CppWrapperCpu.generate_py_arg"


def _is_optional_list(arg_type: Any) -> bool:
    import torch

    return isinstance(arg_type, torch.OptionalType) and isinstance(arg_type.getElementType(), torch.ListType)


def _present_lists_as_lists(original: Any) -> Any:
    @wraps_original(original)
    def generate_py_arg(self: Any, py_args_var: Any, idx: Any, raw_arg: Any, arg_type: Any) -> Any:
        if raw_arg is not None and _is_optional_list(arg_type):
            arg_type = arg_type.getElementType()
        return original(self, py_args_var, idx, raw_arg, arg_type)

    return generate_py_arg


def _upstream_builds_optional_lists() -> bool:
    """Whether this torch's generate_py_arg takes a present Optional[List[int]] (ints need nothing of ``self``)."""
    import torch
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    optional_ints = torch.OptionalType(torch.ListType(torch.IntType.get()))
    generate_py_arg = inspect.unwrap(CppWrapperCpu.generate_py_arg)  # torch's own, were this record applied
    try:
        generate_py_arg(SimpleNamespace(), "py_args", 1, [1, 2], optional_ints)
    except NotImplementedError:
        return False
    return True


OPTIONAL_LIST_ARGS = Patch(
    id="cpp-wrapper-optional-list-args",
    proven_by=(
        "tests/common/fixes/test_cpp_wrapper_optional_lists.py::"
        "test_without_its_record_an_optional_int_list_stops_the_cpp_wrapper",
    ),
    layer="fix",
    why=(
        "a C++ wrapper calling an op through Python with an optional list (convolution_backward's bias_sizes: "
        "every convolution's training step under torch_npu's codegen) stops codegen before torch 2.12"
    ),
    upstream="torch 2.12 codegen/cpp_wrapper_cpu.py generate_py_arg (Optional[List] built as a list)",
    remove_when="the oldest supported torch is 2.12",
    changes=(Change(TARGET, _present_lists_as_lists),),
    upstream_has_fix=_upstream_builds_optional_lists,
)

FIXES: tuple[Patch, ...] = (OPTIONAL_LIST_ARGS,)
