"""Fix records for bugs in torch_npu's own Python codegen that later release branches fixed and earlier ones kept:
torch_npu ships one release branch per torch line, and a codegen fix merged into one branch often never reaches the
others. These records carry such fixes to the torch_npu releases that lack them, on whichever torch line they run."""

# Each record probes the *installed* torch_npu by running its code on a minimal case (never by its version number), so a
# torch_npu that has the fix, or never had the bug, gets "not needed"; without torch_npu's Inductor code there is
# nothing to patch and the record is skipped, saying so.

# Importing this module imports no torch or torch_npu module; the records' callables do, when applied or probed.

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.targets import Target

FILTER_MASKS = torch_npu_names.qualname("index-kernel-filter-masks")
PERSISTENT_REDUCTION = torch_npu_names.qualname("index-kernel-persistent-reduction")
ASCEND950 = torch_npu_names.qualname("npu-config-ascend950")

# ------------------------------------------------------------------------------------ masked loads, size symbols
# torch's size symbols as LoopBody indexing prints them (torch/utils/_sympy/symbol.py prefix_str: SymT.SIZE "s",
# SymT.PRECOMPUTED_SIZE "ps", SymT.INDEX "i"), the names torch_npu's fix skips. Kernel axes are x0, y1, r2, ...
_SIZE_SYMBOL = re.compile(r"(?:s|ps|i)\d+")


def is_size_symbol(name: object) -> bool:
    return _SIZE_SYMBOL.fullmatch(str(name)) is not None


def _index_kernel_module() -> Any:
    return Target.parse(FILTER_MASKS).import_module()


def _ignoring_size_symbols(original: Callable[..., Any]) -> Callable[..., Any]:
    """filter_masks keeps a load's guarding mask only when every axis of the enclosing masked subblock appears in
    the load's index. The subblock's axes are read from ``V.kernel.current_subblock_axis``, which also holds the
    size symbols of its mask (``x0 < s1``): they are not axes (torch_npu's ``masked`` ands no mask in for them), yet
    they fail that test. Present the set without them for the call, then put the recorded set back."""

    @wraps_original(original)
    def filter_masks(self: Any, mask_vars: Any, *args: Any, **kwargs: Any) -> Any:
        from torch._inductor.virtualized import V

        kernel = V.kernel
        recorded = getattr(kernel, "current_subblock_axis", None)
        if not recorded or not any(map(is_size_symbol, recorded)):
            return original(self, mask_vars, *args, **kwargs)
        kernel.current_subblock_axis = {axis for axis in recorded if not is_size_symbol(axis)}
        try:
            return original(self, mask_vars, *args, **kwargs)
        finally:
            kernel.current_subblock_axis = recorded

    return filter_masks


def probe_axis(name: str, *, reduction: bool = False) -> SimpleNamespace:
    """A tiled kernel axis for the probes: the fields filter_masks reads (torch_npu/_inductor/codegen/split_tiling.py
    and triton.py axis nodes)."""
    return SimpleNamespace(
        name=name, is_tiling_axis=True, is_reduction=reduction, is_no_loop_axis=False, is_vectorized_split=False
    )


def probe_kernel(module: Any, axes: list[SimpleNamespace], *, persistent: bool, subblock: set[str]) -> Any:
    """An ``NPUIndexTritonKernel`` of torch_npu's index-kernel ``module`` for the filter_masks probes, with only the
    fields that method reads: its tiled axes, whether it is a persistent reduction, the masked subblock's axes, and a
    SIMD kernel type where the release has kernel types."""
    kernel = object.__new__(module.NPUIndexTritonKernel)
    kernel.sorted_axis = axes
    kernel.persistent_reduction = persistent
    kernel_type = getattr(module, "NPUKernelType", None)
    if kernel_type is not None:
        kernel.npu_kernel_type = kernel_type.SIMD
    kernel.current_subblock_axis = subblock
    return kernel


def filter_masks_keeps_guard() -> bool:
    """Whether the installed torch_npu's filter_masks keeps a load's guarding mask when the masked subblock records
    only a size symbol besides axes the load indexes: its own code run on a two-axis kernel (x0, y1) with the
    subblock {y1, s0} and a load indexed by y1 (the first slice of a cat over a dynamic dimension). A release whose
    filter_masks takes no index variables has no subblock-axis filtering (2.12.0.post3): it drops no guard."""
    import inspect

    from torch._inductor.virtualized import V

    module = _index_kernel_module()
    kernel_class = module.NPUIndexTritonKernel
    if "index_vars" not in inspect.signature(kernel_class.filter_masks).parameters:
        return True
    kernel = probe_kernel(module, [probe_axis("x0"), probe_axis("y1")], persistent=False, subblock={"y1", "s0"})
    guard = object.__new__(module.TritonCSEVariable)
    guard.name = "tmp0"
    masks = {guard, "x0_mask", "y1_mask"}
    with V.set_kernel_handler(kernel):
        kernel.filter_masks(masks, ["y1"])
    return guard in masks


# ``NPUIndexTritonKernel.filter_masks`` drops the mask guarding a load inside a masked subblock whenever the subblock's
# mask mentions a size symbol the load's index does not (the first slice of a cat, or ``slice_scatter``, over a dynamic
# dimension): the load then reads past its tensor. Fixed on torch_npu v2.10.0 (!44117) and master (!44898); torch_npu
# 2.7.1.post11 and 2.9.0.post9 have the bug; 2.12.0.post3's kernel has no subblock-axis filtering at all.
MASKED_LOAD_SIZE_SYMBOLS = Patch(
    id="torch-npu-masked-load-size-symbols",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_torch_npus_kernels_show_each_bug_without_its_record_and_not_with_it",
        "tests/common/fixes/test_torch_npu_executed.py::"
        "test_execute_names_the_load_past_the_shorter_tensor_without_the_masked_load_record",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel drops the mask guarding a load in a masked subblock when the subblock's mask names "
        "a size symbol the load's index does not (cat or slice_scatter over a dynamic dimension): the load reads "
        "past the end of its tensor"
    ),
    upstream=(
        "torch_npu v2.10.0 !44117 and master !44898 (NPUIndexTritonKernel.filter_masks skips size symbols); "
        "missing from the v2.7.1 and v2.9.0 branches and their wheels"
    ),
    remove_when="every torch_npu release in use skips size symbols in filter_masks (the probe then says not needed)",
    changes=(Change(FILTER_MASKS, _ignoring_size_symbols, optional=True),),
    upstream_has_fix=filter_masks_keeps_guard,
    patches_package="torch_npu",
)


# ------------------------------------------------------------------------------ persistent reductions off Ascend950
# Reduction elements a persistent kernel may hold for the INNER/DEFAULT hints: torch_npu's fixed branches
# (v2.9.0 codegen/triton.py should_use_persistent_reduction; 2.12.0.post3 npu_choices.py), upstream torch's value
FIXED_THRESHOLD = 1024
BUGGY_THRESHOLD = 4096  # what torch_npu 2.7.1.post11 uses on every SoC (right for Ascend950 only)


def _on_ascend950() -> bool:
    config, name = Target.parse(ASCEND950).owner()
    if not hasattr(config, name):  # the probe asks first: activation, not a compile, reports it
        raise RuntimeError(f"torch_npu has no {ASCEND950}: cannot tell whether the SoC is an Ascend950")
    return bool(getattr(config, name))


def _capped_for_unified_buffer(original: Callable[..., Any]) -> Callable[..., Any]:
    """Ask torch_npu's heuristic first; off Ascend950, a persistent reduction it chose for the INNER/DEFAULT hints
    must also fit the 1024-element budget, scaled by the same cooperative-reduction and multi-kernel factors its
    own threshold gets (those factors and the hints are upstream torch's TritonKernel heuristic)."""

    @wraps_original(original)
    def should_use_persistent_reduction(self: Any) -> bool:
        chosen = bool(original(self))
        if not chosen or _on_ascend950():
            return chosen
        from torch._inductor import config
        from torch._inductor.runtime.hints import ReductionHint
        from torch._inductor.virtualized import V

        features = self.features
        if features.get_reduction_hint() not in (ReductionHint.INNER, ReductionHint.DEFAULT):
            return chosen  # torch_npu's threshold for the other hints (64) is already the fixed one
        budget = FIXED_THRESHOLD
        if getattr(self, "cooperative_reduction", False):
            try:
                budget *= 32 // min(V.graph.sizevars.size_hint(features.numel), 32)
            except ValueError:
                pass  # an unbacked size: torch_npu leaves its threshold unscaled too
        if config.triton.multi_kernel:
            budget *= 16
        return bool(V.graph.sizevars.statically_known_leq(features.reduction_numel, budget))

    return should_use_persistent_reduction


def persistent_reduction_fits() -> bool:
    """Whether the installed torch_npu's heuristic keeps a 2048-element inner reduction out of a persistent kernel
    on this SoC: its own should_use_persistent_reduction run on a minimal kernel. On Ascend950 (4096 is its budget)
    and where torch_npu's index kernel leaves the decision to torch (2.12.0.post3: npu_choices.py), nothing to fix."""
    import unittest.mock

    from torch._inductor import config
    from torch._inductor.runtime.hints import ReductionHint
    from torch._inductor.sizevars import SizeVarAllocator
    from torch._inductor.virtualized import V

    module = _index_kernel_module()
    kernel_class = module.NPUIndexTritonKernel
    if "should_use_persistent_reduction" not in kernel_class.__dict__ or _on_ascend950():
        return True
    kernel = object.__new__(kernel_class)
    kernel.inside_reduction = True
    kernel.cooperative_reduction = False
    # 2.13.0+ looks for a Welford reduction first (find_reduction_node: the node being generated, else the kernel's
    # node schedule): none here
    kernel.current_node = None
    kernel.node_schedule = []
    kernel.features = SimpleNamespace(
        get_reduction_hint=lambda: ReductionHint.INNER,
        numel=64,
        reduction_numel=2 * FIXED_THRESHOLD,
        node_schedule=[],
    )
    graph = SimpleNamespace(sizevars=SizeVarAllocator())
    with (
        V.set_graph_handler(graph),  # type: ignore[arg-type]
        unittest.mock.patch.object(config.triton, "persistent_reductions", True),
        unittest.mock.patch.object(config.triton, "multi_kernel", 0),
    ):
        return not kernel.should_use_persistent_reduction()


# ``NPUIndexTritonKernel.should_use_persistent_reduction`` keeps up to 4096 reduction elements in one persistent
# (single-pass) kernel on every SoC; only Ascend950's unified buffer holds that, the others overflow it. torch_npu's
# v2.9.0, v2.10.0 and master use 1024 off Ascend950 (master cb704728e); its 2.7.1 branch and 2.7.1.post11 wheel do not;
# 2.12.0.post3 decides in ``npu_choices.py`` with 1024.
PERSISTENT_REDUCTION_UB = Patch(
    id="torch-npu-persistent-reduction-ub",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_torch_npus_kernels_show_each_bug_without_its_record_and_not_with_it",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel makes reductions of up to 4096 elements persistent on every SoC, which overflows "
        "the unified buffer of SoCs other than Ascend950; its later branches allow 1024 there"
    ),
    upstream=(
        "torch_npu master cb704728e (should_use_persistent_reduction: 1024 off Ascend950), on its v2.9.0 and v2.10.0 "
        "branches; missing from the v2.7.1 branch and the 2.7.1.post11 wheel"
    ),
    remove_when="every torch_npu release in use has the Ascend950-only threshold (the probe then says not needed)",
    changes=(Change(PERSISTENT_REDUCTION, _capped_for_unified_buffer, optional=True),),
    upstream_has_fix=persistent_reduction_fits,
    patches_package="torch_npu",
)

# ---------------------------------------------------------------------------- argmax/argmin of a looped reduction
# The kernel classes of torch_npu whose reductions end in triton_helpers.max_with_index / min_with_index: the index
# kernel (every release) and, where they exist, the no_linear fallback's kernels (torch's reduction codegen).
KERNEL_CODEGEN = tuple(
    torch_npu_names.qualname(hook)
    for hook in ("index-kernel-codegen", "no-linear-kernel-codegen", "no-linear-loop-kernel-codegen")
)
RUNTIME_HELPERS = torch_npu_names.module_of("runtime-triton-helpers")
ARGREDUCE_HELPERS = "npu_inductor_compat.common.triton_argreduce"
_TORCH_ARGREDUCE = re.compile(r"\btriton_helpers\.(max|min)_with_index\(")
_TRITON_LANGUAGE = "import triton.language as tl\n"


def argreduce_in_two_steps(source: str) -> str:
    """A kernel's source with its argmax/argmin calls on triton_argreduce.py's helpers, which that module imports
    (after ``import triton.language as tl``, or first): the kernel imports them wherever it is compiled."""
    if not _TORCH_ARGREDUCE.search(source):
        return source
    rewritten = _TORCH_ARGREDUCE.sub(r"triton_argreduce.\1_with_index(", source)
    importing = f"from {ARGREDUCE_HELPERS.rpartition('.')[0]} import triton_argreduce\n"
    head, anchor, rest = rewritten.partition(_TRITON_LANGUAGE)
    return f"{head}{anchor}{importing}{rest}" if anchor else importing + rewritten


def _argreduce_rewritten(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def codegen_kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        return argreduce_in_two_steps(original(self, *args, **kwargs))

    return codegen_kernel


def argreduce_helpers_reduce_twice() -> bool:
    """Whether the max_with_index/min_with_index torch_npu's kernels call are its own: they import triton_helpers
    from its runtime package where it has one (2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0, 2.14.0), else
    torch's; only 2.10.0.post7, 2.13.0 and 2.14.0 define the two there (torch's reduce value and index at once)."""
    import importlib

    from torch._inductor.runtime import triton_helpers as torchs

    try:
        helpers = importlib.import_module(RUNTIME_HELPERS)
    except ModuleNotFoundError as err:
        if err.name is None or not RUNTIME_HELPERS.startswith(err.name):
            raise
        return False  # the kernels import torch's module
    return all(getattr(helpers, name) is not getattr(torchs, name) for name in ("max_with_index", "min_with_index"))


# Kernels end an argmax/argmin with torch's ``max_with_index`` / ``min_with_index``, one two-operand ``tl.reduce``;
# triton-ascend lowers it over a looped reduction's carried accumulators to the lane position, not the carried index.
# Fixed on torch_npu v2.10.0 (!44642, !44814) and master (!44897) in its runtime ``triton_helpers``; the other six
# releases' kernels call torch's.
LOOPED_ARGREDUCE_INDEX = Patch(
    id="torch-npu-looped-argreduce-index",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_a_looped_argmax_reduces_value_and_index_apart_under_the_record",
    ),
    layer="fix",
    why=(
        "torch_npu's kernels end an argmax/argmin with torch's max_with_index/min_with_index, one tl.reduce over "
        "(value, index): over a looped reduction's carried accumulators triton-ascend returns the lane position, "
        "not the carried index (a wrong index, no error); the kernels call two single-operand reductions instead"
    ),
    upstream=(
        "torch_npu v2.10.0 !44642/!44814 and master !44897 (runtime/triton_helpers.py reduces twice), in the "
        "2.10.0.post7, 2.13.0 and 2.14.0 wheels; 2.7.1.post11, 2.8.0.post5, 2.9.0.post9, 2.9.1, 2.11.0.post3 and "
        "2.12.0.post3 call torch's (docs/torch-npu-reports.md)"
    ),
    remove_when="every torch_npu release in use defines its own max_with_index (the probe then says not needed)",
    changes=tuple(Change(target, _argreduce_rewritten, optional=True) for target in KERNEL_CODEGEN),
    upstream_has_fix=argreduce_helpers_reduce_twice,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (MASKED_LOAD_SIZE_SYMBOLS, PERSISTENT_REDUCTION_UB, LOOPED_ARGREDUCE_INDEX)

__all__ = [
    "FIXES",
    "LOOPED_ARGREDUCE_INDEX",
    "MASKED_LOAD_SIZE_SYMBOLS",
    "PERSISTENT_REDUCTION_UB",
    "argreduce_helpers_reduce_twice",
    "argreduce_in_two_steps",
    "filter_masks_keeps_guard",
    "is_size_symbol",
    "persistent_reduction_fits",
    "probe_axis",
    "probe_kernel",
]
