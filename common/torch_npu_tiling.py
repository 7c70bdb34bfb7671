"""Fix record for torch_npu's index kernel tiling a non-reduction axis of a reduction over two axes and then never
opening that axis's loop: the kernel reads ``loop_x0`` undefined (batch norm; docs/torch-npu-reports.md)."""

# Importing this module imports no torch or torch_npu module; the wrapper runs only inside Inductor codegen.
#
# torch_npu's SplitTiling.select_tiling_axis (codegen/split_tiling.py) tiles every "low dim" axis, and its own comment
# states the rule for kernels that reduce over several axes: only reduction axes may be tiling axes. 2.8.0.post5,
# 2.9.1, 2.11.0.post3 and 2.12.0.post3 count an axis as low dim when any read index has it at stride 1
# (find_lowest_dimension), so batch norm's channel axis x0 (``running_mean[x0]``) is tiled; their
# NPUIndexTritonKernel.codegen_body then opens the loop of a tiling axis other than the last only under
# ``if self.numof_reduction_axis() <= 1``, while the axis's index still reads ``loop_x0`` (codegen/triton.py
# IterationRangesEntryNPUIndex.codegen_index). The other branches (2.7.1.post11, 2.9.0.post9, 2.10.0.post7 on) keep an
# axis only when it has stride 1 in every index (``low_dims - high_dims``) and open a loop for every tiling axis that
# is not a no-loop axis. The record keeps such a kernel's tiling to its reduction axes, as the rule says: the channel
# axis becomes the per-program ``for x0 in range(x0_offset, ...)`` loop, the kernel 2.7.1.post11 writes for the same
# batch norm.

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

SELECT_TILING = torch_npu_names.qualname("split-tiling-axes")


def loop_only_below_two_reductions(function: ast.AST) -> bool:
    """Whether ``codegen_body`` (its syntax tree) writes a ``for loop_<axis>`` line only under a test of
    ``numof_reduction_axis()``: the branch that leaves a tiling axis of a two-axis reduction without its loop."""
    return any(
        isinstance(node, ast.If)
        and "numof_reduction_axis()" in ast.unparse(node.test)
        and any("for loop_" in ast.unparse(statement) for statement in node.body)
        for node in ast.walk(function)
    )


def codegen_body_opens_every_tiling_loop() -> bool:
    """The probe: the installed NPUIndexTritonKernel.codegen_body, read from its source, opens the loop of every
    tiling axis whatever the number of reduction axes (the releases where the bug does not arise)."""
    return not loop_only_below_two_reductions(torch_npu_names.source_tree("index-kernel-codegen-body"))


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
    @wraps_original(original)
    def select_tiling_axis(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        reduction_axes_only(self.kernel)
        return result

    return select_tiling_axis


TWO_REDUCTION_TILING = Patch(
    id="torch-npu-two-reduction-tiling",
    layer="fix",
    why=(
        "torch_npu's index kernel tiles a non-reduction axis of a reduction over two axes (batch norm's channels) "
        "but opens its loop only when the kernel reduces over one: the kernel reads loop_x0, never defined, and "
        "cannot compile; only the reduction axes are tiled, as torch_npu's own tiling rule says"
    ),
    upstream=(
        "torch_npu's v2.7.1 and v2.9.0 branches and 2.10.0.post7 on (low dims in every index, a loop for every "
        "tiling axis); missing from 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3"
    ),
    remove_when="no torch_npu release in use opens tiling loops only for kernels of one reduction axis",
    changes=(Change(SELECT_TILING, _reduction_axes_tiled, optional=True),),
    upstream_has_fix=codegen_body_opens_every_tiling_loop,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (TWO_REDUCTION_TILING,)

__all__ = ["FIXES", "TWO_REDUCTION_TILING", "loop_only_below_two_reductions", "reduction_axes_only"]
