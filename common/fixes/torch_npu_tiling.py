"""Fix record for torch_npu's index kernel tiling a non-reduction axis of a reduction over two axes against its own
rule: the kernel reads ``loop_x0`` undefined, or sums across channels into a store triton refuses (batch norm)."""

# Importing this module imports no torch or torch_npu module; the wrapper runs only inside Inductor codegen.

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

SELECT_TILING = torch_npu_names.qualname("split-tiling-axes")


def low_dims_tiled_whatever_the_reductions(function: ast.AST) -> bool:
    """Whether ``select_tiling_axis`` (its syntax tree) makes low dims tiling axes under no test of the kernel's
    reductions (the bug): the test that picks them, or one around it, would name them."""

    def unguarded(node: ast.AST, guarded: bool) -> bool:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "low_dims" in test and not guarded and "reduction" not in test:
                return True
            guarded = guarded or "reduction" in test
        return any(unguarded(child, guarded) for child in ast.iter_child_nodes(node))

    return unguarded(function, False)


def tiling_keeps_to_reduction_axes() -> bool:
    """The probe: the installed SplitTiling.select_tiling_axis, read from its source, tests the kernel's reductions
    before it tiles a low dim (the releases where the bug would not arise; none so far)."""
    return not low_dims_tiled_whatever_the_reductions(torch_npu_names.source_tree("split-tiling-axes"))


def reduction_axes_only(kernel: Any) -> list[str]:
    """Drop every axis but the reduction ones from the tiling of ``kernel`` when it reduces over more than one axis,
    renumbering the rest in their order; the names of the axes dropped."""
    if kernel.numof_reduction_axis() <= 1:
        return []
    dropped = [axis for axis in kernel.tiling_axis if axis.prefix != "r"]
    for axis in dropped:
        axis.is_tiling_axis, axis.tiling_order = False, None
    kernel.tiling_axis[:] = [axis for axis in kernel.tiling_axis if axis.prefix == "r"]
    for order, axis in enumerate(kernel.tiling_axis):
        axis.tiling_order = order
    return [axis.name for axis in dropped]


def _reduction_axes_tiled(original: Callable[..., Any]) -> Callable[..., Any]:
    """SplitTiling.select_tiling_axis, whose tiling of a kernel reducing over several axes keeps to its reduction axes.

    torch_npu's SplitTiling.select_tiling_axis (codegen/split_tiling.py) tiles every "low dim" axis, and its own
    comment states the rule for kernels that reduce over several axes: only reduction axes may be tiling axes. No
    release keeps that rule when it picks the low dims, and a channel axis that is a low dim breaks the kernel in one
    of two ways:

    - 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 count an axis as low dim when any read index has it at
      stride 1 (find_lowest_dimension), so batch norm's channel axis x0 (``running_mean[x0]``) is tiled; their
      NPUIndexTritonKernel.codegen_body opens the loop of a tiling axis other than the last only under
      ``if self.numof_reduction_axis() <= 1``, while the axis's index still reads ``loop_x0``
      (IterationRangesEntryNPUIndex.codegen_index).
    - 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 keep an axis only when it has stride 1 in every
      index (``low_dims - high_dims``), which a channels-last read beside a contiguous one still allows (ResNet's
      batch-norm backward). Where the channel axis lies between the reduction axes (SplitTiling.contiguous_reduction
      is False) NPUIndexTritonKernel.reduction flattens the whole block, channels included, into one sum, and
      store_reduction writes that [1] value through the [1, X0BLOCK_SUB, 1] pointer ``x0 + tl.arange(0,1)``: triton
      refuses it ("Cannot broadcast, rank mismatch"). Their contiguous case permutes the channels out first and stays
      as it is.

    The record keeps such a kernel's tiling to its reduction axes, as the rule says: the channel axis becomes the
    per-program ``for x0 in range(x0_offset, ...)`` loop, the kernel these releases write for NCHW batch norm.
    """

    @wraps_original(original)
    def select_tiling_axis(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        # a contiguous reduction is left as torch_npu tiled it; 2.8.0.post5's line has no such attribute (it opens
        # no loop for any such kernel)
        if not getattr(self, "contiguous_reduction", False):
            reduction_axes_only(self.kernel)
        return result

    return select_tiling_axis


TWO_REDUCTION_TILING = Patch(
    id="torch-npu-two-reduction-tiling",
    proven_by=(
        "tests/common/fixes/test_torch_npu_tiling.py::test_the_record_keeps_a_channels_last_batch_norms_channels_out_of_its_sums",
        "tests/common/fixes/test_torch_npu_tiling.py::test_the_record_tiles_batch_norms_reduction_axes_only_and_its_statistics_are_right",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel tiles a non-reduction axis of a reduction over two axes (batch norm's channels), "
        "against its own tiling rule: 2.8.0.post5's line never opens that axis's loop (loop_x0 undefined), the "
        "others sum across it into a store triton refuses; only the reduction axes are tiled, as the rule says"
    ),
    upstream=(
        "none: every release from 2.7.1.post11 to 2.14.0 tiles a low dim whatever the kernel's reduction axes "
        "(SplitTiling.select_tiling_axis); the NCHW batch norm of 2.7.1.post11's line keeps its channels untiled"
    ),
    remove_when="SplitTiling.select_tiling_axis keeps the tiling of a reduction over two axes to those axes",
    changes=(Change(SELECT_TILING, _reduction_axes_tiled, optional=True),),
    upstream_has_fix=tiling_keeps_to_reduction_axes,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (TWO_REDUCTION_TILING,)

__all__ = ["FIXES", "TWO_REDUCTION_TILING", "low_dims_tiled_whatever_the_reductions", "reduction_axes_only"]
