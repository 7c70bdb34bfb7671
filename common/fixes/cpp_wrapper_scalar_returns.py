"""Record cpp-wrapper-scalar-returns: a C++ wrapper's call of a fallback op that also returns numbers (torch_npu's
npu_fusion_attention: seed, offset, numels) fails to generate (torch 2.7), to compile (2.8 on), and to run."""

# Codegen (codegen/cpp_wrapper_cpu.py, generate_fallback_kernel_with_runtime_lookup): torch 2.7 raises "Unexpected
# output: <class 'int'>"; 2.8 to 2.15 declare and assign the number's text as a tensor handle (`RAIIAtenTensorHandle
# 0;`). Inductor already used the value where the graph needs it, as the Python wrapper does: it is left unnamed. At
# run time codecache.custom_op_wrapper refuses any non-tensor result; a number is handed back as an unread placeholder.

from __future__ import annotations

import inspect
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

TARGET = "torch._inductor.codegen.cpp_wrapper_cpu:CppWrapperCpu.generate_fallback_kernel_with_runtime_lookup"
RUNTIME = "torch._inductor.codecache:custom_op_wrapper"
_SCALARS = (int, float, bool)


def _returns_numbers(func: Any) -> bool:
    import torch

    numbers = (torch.IntType, torch.SymIntType, torch.FloatType, torch.BoolType, torch.NumberType)
    schema = getattr(func, "_schema", None)
    return schema is not None and any(isinstance(ret.type, numbers) for ret in schema.returns)


def _resolved(op: str) -> Any:
    """``torch.ops.<namespace>.<name>.<overload>`` as the wrapper names it, or None."""
    import torch

    if not op.startswith("torch.ops."):
        return None
    found: Any = torch
    for part in op.split(".")[1:]:
        found = getattr(found, part, None)
    return found


def _placeholders_for_numbers(original: Any) -> Any:
    @wraps_original(original)
    def custom_op_wrapper(op: str, *args: Any) -> Any:
        func = _resolved(op)
        if func is None or not _returns_numbers(func):
            return original(op, *args)
        import torch

        # the wrapper passes each tensor as a capsule owning a handle, and kwarg-only arguments last, in order
        def value(arg: Any) -> Any:
            if type(arg).__name__ == "PyCapsule":
                return torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr(arg)
            return type(arg)(value(item) for item in arg) if isinstance(arg, (list, tuple)) else arg

        values = [value(arg) for arg in args]
        names = [argument.name for argument in func._schema.arguments if argument.kwarg_only]
        keywords = dict(zip(names, values[len(values) - len(names) :], strict=True)) if names else {}
        result = func(*values[: len(values) - len(names)], **keywords)
        items = result if isinstance(result, (list, tuple)) else [result]
        tensors = [item if isinstance(item, torch.Tensor) else torch.empty(0) for item in items]
        return torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors(tensors)

    return custom_op_wrapper


def _without_scalars(outputs: Any) -> Any:
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_without_scalars(output) for output in outputs)
    return None if isinstance(outputs, _SCALARS) else outputs


def _scalars_unnamed(original: Any) -> Any:
    signature = inspect.signature(original)

    @wraps_original(original)
    def generate_fallback_kernel_with_runtime_lookup(self: Any, *args: Any, **kwargs: Any) -> Any:
        from torch._inductor.virtualized import V

        bound = signature.bind(self, *args, **kwargs)
        outputs = bound.arguments.get("outputs")
        if not V.graph.aot_mode and isinstance(outputs, (list, tuple)):  # AOT's proxy executor takes every output
            bound.arguments["outputs"] = _without_scalars(outputs)
        return original(*bound.args, **bound.kwargs)

    return generate_fallback_kernel_with_runtime_lookup


SCALAR_RETURNS = Patch(
    id="cpp-wrapper-scalar-returns",
    proven_by=(
        "tests/common/fixes/test_cpp_wrapper_scalar_returns.py::"
        "test_without_its_record_a_cpp_wrapper_of_npu_fusion_attention_is_not_built",
    ),
    layer="fix",
    why=(
        "a C++ wrapper calling a fallback op that returns numbers besides tensors (torch_npu's npu_fusion_attention, "
        "FlashAttention on Ascend) stops codegen on torch 2.7 and is C++ that does not compile from 2.8 on"
    ),
    upstream="torch >= 2.7 codegen/cpp_wrapper_cpu.py generate_fallback_kernel_with_runtime_lookup",
    remove_when="Inductor's C++ wrapper leaves a fallback op's non-tensor returns unnamed",
    changes=(Change(TARGET, _scalars_unnamed), Change(RUNTIME, _placeholders_for_numbers)),
)

FIXES: tuple[Patch, ...] = (SCALAR_RETURNS,)
