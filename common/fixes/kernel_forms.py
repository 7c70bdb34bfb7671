"""Fix records that make stock Inductor write npu kernels in forms triton-ascend's compiler lowers (rejection classes
A and B of the real-model corpus, docs/codegen.md); each changes only what Inductor emits for device "npu".
Importing this module imports no torch module; the records' callables do, when applied."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common.device.layer_shared import DEVICE
from npu_inductor_compat.patching import Change, Patch, wraps_original


def _on_npu(node: Any) -> bool:
    device = node.get_device() if hasattr(node, "get_device") else None
    return getattr(device, "type", device) == DEVICE


# --------------------------------------------------------------------------------- B: Welford -> two-step variance
def _two_step_on_npu(original: Callable[..., Any]) -> Callable[..., Any]:
    # Every argument passes through: torch 2.13 added input_dtype to (x, axis, keepdim); only x is read here.
    @wraps_original(original)
    def use_two_step_variance(x: Any, *args: Any, **kwargs: Any) -> bool:
        # npu: always the sum-based variance (mean, then the sum of squared differences): two plain tl.sum
        # reductions, where upstream's Welford reduction of a looped kernel is one tl.reduce of three values
        return True if _on_npu(x) else bool(original(x, *args, **kwargs))

    return use_two_step_variance


def _var_mean_lowered_elsewhere() -> bool:
    """Whether aten.var_mean's registered lowering is another than torch's own: torch_npu registers one that always
    takes the two-step variance (its lowering.py var_mean_helper_, in every release the survey reads)."""
    import torch
    from torch._inductor import lowering

    return lowering.lowerings.get(torch.ops.aten.var_mean.correction) is not lowering.var_mean


VARIANCE_TWO_STEP = Patch(
    id="npu-variance-two-step",
    proven_by=(
        "tests/common/fixes/test_kernel_forms.py::test_class_b_a_looped_variance_is_accepted_with_its_record",
        "tests/common/device/test_layer_norm.py::test_layer_norm_forward_and_backward_compile_on_npu_with_stock_inductor",
    ),
    layer="fix",
    why=(
        "var_mean (layer_norm, batch_norm, var, std) over a looped reduction lowers to a Welford reduction, one "
        "tl.reduce of three values (mean, m2, weight); triton-ascend lowers a reduce of one value or of a value "
        "and its index only ('Only reduce or reduce with index are supported'), so every config of every such "
        "kernel is rejected. npu tensors take Inductor's two-step variance instead, as torch_npu's own lowering does"
    ),
    upstream=(
        "torch_npu 2.7.1.post11 lowering.py var_mean_helper_ (always the sum-based var_mean_sum_; its triton.py "
        "raises for welford_reduce); torch's own switch (config.mtia.disable_welford_reduction, 2.12) is for MTIA only"
    ),
    remove_when=(
        "triton-ascend lowers a tl.reduce of three operands (tests/common/fixes/test_kernel_forms.py then says so)"
    ),
    changes=(Change("torch._inductor.lowering:use_two_step_variance", _two_step_on_npu),),
    upstream_has_fix=_var_mean_lowered_elsewhere,
)


# --------------------------------------------------------------- A: a gather's negative-index wrap, as i + shift
# Per npu Triton kernel: the name of upstream's wrapped index -> (the index before wrapping, the size it wraps by)
_wrapped: weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, Any]]] = weakref.WeakKeyDictionary()


def _in_npu_triton_kernel(kernel: Any) -> bool:
    from torch._inductor.codegen.triton import TritonKernel
    from torch._inductor.virtualized import V

    device = getattr(V.graph, "current_device", None)
    return isinstance(kernel, TritonKernel) and getattr(device, "type", None) == DEVICE


def _noting_wraps(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def indirect_indexing(self: Any, var: Any, size: Any, check: bool = True, wrap_neg: bool = True) -> Any:
        symbol = original(self, var, size, check, wrap_neg)
        mixed = var.bounds.lower < 0 and var.bounds.upper >= 0  # may be negative or not: upstream wrote a where
        kernel = getattr(self, "kernel", None)
        if wrap_neg and mixed and _in_npu_triton_kernel(kernel):
            _wrapped.setdefault(kernel, {})[str(symbol)] = (var, size)
        return symbol

    return indirect_indexing


def _loading_through_shift(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def load(self: Any, name: str, index: Any) -> Any:
        wraps = _wrapped.get(self)
        if wraps:
            index = index.xreplace(
                {symbol: _shifted(*wraps[symbol.name]) for symbol in index.free_symbols if symbol.name in wraps}
            )
        return original(self, name, index)

    return load


def _shifted(var: Any, size: Any) -> Any:
    """``var + where(var < 0, size, 0)``, in the kernel being generated, as an index symbol: the value upstream's
    ``where(var < 0, var + size, var)`` has (same masks; upstream's bounds check stays on its own variable)."""
    import sympy
    import torch
    from torch._inductor.utils import sympy_index_symbol
    from torch._inductor.virtualized import ops

    size = sympy.Integer(size) if isinstance(size, int) else size
    shift = ops.where(ops.lt(var, 0), ops.index_expr(size, torch.int64), ops.constant(0, torch.int64))
    return sympy_index_symbol(str(ops.add(var, shift)))


INDEX_WRAP_AS_SHIFT = Patch(
    id="npu-index-wrap-as-shift",
    proven_by=(
        "tests/common/fixes/test_kernel_forms.py::test_class_a_a_gather_through_the_index_wrap_at_xblock_1_is_accepted_with_its_record",
    ),
    layer="fix",
    why=(
        "a gather whose index may be negative (embedding, x[idx]) loads through Inductor's wrap "
        "where(i < 0, i + n, i); in a persistent reduction at XBLOCK=1 that aborts triton-adapter-opt "
        "(llvm::cast to scf::ForOp), so that config of every such kernel is rejected. Loads in npu Triton kernels "
        "use the same index written i + where(i < 0, n, 0), which it lowers; stores and atomics keep upstream's "
        "form (an embedding backward's atomic_add lowers only with it)"
    ),
    upstream=(
        "torch codegen/common.py CSEProxy.indirect_indexing (same wrap on every line); torch_npu's index kernel "
        "copies it unchanged; a triton-ascend bug (triton-adapter-opt), not reported upstream yet"
    ),
    remove_when=(
        "triton-ascend lowers a load through the where-form wrap at XBLOCK=1 (tests/common/fixes/test_kernel_forms.py)"
    ),
    changes=(
        Change("torch._inductor.codegen.common:CSEProxy.indirect_indexing", _noting_wraps),
        Change("torch._inductor.codegen.triton:TritonKernel.load", _loading_through_shift),
    ),
)

FIXES: tuple[Patch, ...] = (INDEX_WRAP_AS_SHIFT, VARIANCE_TWO_STEP)
