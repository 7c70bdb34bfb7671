"""Fix record for torch_npu's index kernel making a reduction of dynamic length persistent: its persistent kernels
hold the reduced axis unmasked, which is right only when the block is the length; a dynamic length gets a loop."""

# Importing this module imports no torch or torch_npu module; the record's callables do, when applied or probed.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.fixes.torch_npu_backports import probe_axis, probe_kernel
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.targets import Target

FILTER_MASKS = torch_npu_names.qualname("index-kernel-filter-masks")
PERSISTENT_REDUCTION = torch_npu_names.qualname("index-kernel-persistent-reduction")


def persistent_reductions_keep_their_mask() -> bool:
    """Whether the installed torch_npu's filter_masks keeps the reduced axis's mask in a persistent reduction: its
    own code run on a two-axis persistent kernel (x0, r1) with both axes' masks. 2.7.1.post11, 2.9.0.post9,
    2.10.0.post7, 2.13.0 and 2.14.0 drop it (``is_persistent_reduction_axis``); the others keep every tiled axis's."""
    import inspect

    from torch._inductor.virtualized import V

    module = Target.parse(FILTER_MASKS).import_module()
    axes = [probe_axis("x0"), probe_axis("r1", reduction=True)]
    kernel = probe_kernel(module, axes, persistent=True, subblock=set())
    masks = {"x0_mask", "r1_mask"}
    takes_index_vars = "index_vars" in inspect.signature(module.NPUIndexTritonKernel.filter_masks).parameters
    with V.set_kernel_handler(kernel):
        kernel.filter_masks(masks, ["x0", "r1"]) if takes_index_vars else kernel.filter_masks(masks)
    return "r1_mask" in masks


def length_is_static(numel: Any) -> bool:
    """Whether a reduction length has no size symbol: a sympy expression or int, a tuple of them (2.7.1.post11's
    kernel features), or 2.10.0.post7's NumelList."""
    import sympy

    numels = getattr(numel, "numels", None)
    if callable(numels):
        numel = numels()
    parts = numel if isinstance(numel, tuple | list) else (numel,)
    return not any(sympy.sympify(part).free_symbols for part in parts)


def _static_lengths_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """Ask torch_npu's heuristic first; a persistent reduction it chose over a length that is not static becomes a
    looped one, whose loads, stores and accumulators mask every lane past the length."""

    @wraps_original(original)
    def should_use_persistent_reduction(self: Any) -> bool:
        chosen = bool(original(self))
        if not chosen:
            return chosen
        return length_is_static(self.features.reduction_numel)

    return should_use_persistent_reduction


# ``NPUIndexTritonKernel`` writes a persistent reduction as if its block were the reduced length: filter_masks drops
# the reduced axis's mask from loads and stores (``is_persistent_reduction_axis``) and ``reduction`` reduces the value
# unmasked. Its heuristic still makes a reduction persistent when the length is a size symbol bounded by the threshold
# (a sequence length under ``torch._check(n <= 512)``: BERT's attention softmax), and the config's block then exceeds
# the length (12 lanes in a block of 16): the kernel reads and writes past each row and sums the padding.
DYNAMIC_PERSISTENT_REDUCTION = Patch(
    id="torch-npu-dynamic-persistent-reduction",
    proven_by=(
        "tests/common/fixes/test_torch_npu_dynamic_reductions.py::"
        "test_a_softmax_of_dynamic_length_matches_under_the_record_and_reads_past_its_rows_without",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel makes a reduction of dynamic (bounded) length persistent, but writes persistent "
        "reductions with the reduced axis unmasked, right only when the block is the length: the config's larger "
        "block reads and writes past each row and reduces the padding; such reductions are looped instead"
    ),
    upstream=(
        "filter_masks skips the persistent reduction axis on the v2.7.1, v2.9.0 and v2.10.0 branches and master "
        "(2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0, 2.14.0); 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 "
        "keep every tiled axis's mask"
    ),
    remove_when="every torch_npu release in use masks a persistent reduction's axis (the probe then says not needed)",
    changes=(Change(PERSISTENT_REDUCTION, _static_lengths_only, optional=True),),
    upstream_has_fix=persistent_reductions_keep_their_mask,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (DYNAMIC_PERSISTENT_REDUCTION,)
# wraps the heuristic torch-npu-persistent-reduction-ub wrapped first: a length it ruled out stays ruled out
AFTER = ("torch_npu_backports",)

__all__ = ["DYNAMIC_PERSISTENT_REDUCTION", "FIXES", "length_is_static", "persistent_reductions_keep_their_mask"]
