"""Fix record for torch_npu index kernels built at the size hints: a dynamic graph's kernels take the first call's
numels as constants and run every later size with them. The record pins those sizes, so a new size recompiles."""

# Importing this module imports no torch or torch_npu module; the wrappers run only inside Inductor codegen.

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

RANGE_TREE = torch_npu_names.qualname("index-kernel-range-tree")
SET_RANGES = torch_npu_names.qualname("index-kernel-set-ranges")

log = logging.getLogger(__name__)


# COMPAT(>= 2.11): ShapeEnv.var_to_val is backed_var_to_val
# CAN REMOVE when MIN_SUPPORTED >= (2, 11) [next]: the var_to_val fallback (torch up to 2.10)
def _backed_values(sizes: Any) -> Mapping[Any, Any]:
    """Each backed symbol's hint, the ShapeEnv's own mapping (torch 2.11 renamed var_to_val to backed_var_to_val)."""
    shape_env = sizes.shape_env
    values = getattr(shape_env, "backed_var_to_val", None)
    return values if values is not None else shape_env.var_to_val  # type: ignore[no-any-return]


def pin_at_hints(sizes: Any, expressions: Sequence[Any]) -> list[tuple[str, int]]:
    """Guard each backed symbol of ``expressions`` equal to its hint (unbacked ones have none and are left as they
    are); the symbols newly pinned (not pinned before), with their values."""
    import sympy

    values = _backed_values(sizes)
    symbols = {symbol for expr in expressions for symbol in getattr(sympy.sympify(expr), "free_symbols", ())}
    pinned = []
    for symbol in sorted(symbols, key=str):
        if symbol in values and not isinstance(sizes.simplify(symbol), sympy.Integer):
            value = int(values[symbol])
            sizes.shape_env.evaluate_expr(sympy.Eq(symbol, value))
            pinned.append((str(symbol), value))
    return pinned


# NPUIndexTritonKernel.initialize_range_tree (torch_npu/_inductor/codegen/triton.py) of 2.8.0.post5, 2.9.1,
# 2.11.0.post3 and 2.12.0.post3 replaces each symbolic numel of the kernel by its value at the size hints
# (``x.subs(V.graph.sizevars.var_to_val)``; 2.11.0.post3 backed_var_to_val, 2.12.0.post3 through
# get_sizevars_backed_var_to_val) and adds no guard: the wrapper launches the kernel with those numbers
# (``.run(..., 1280)`` for 40 x 32 elements), and the graph, still dynamic, serves a later 80 x 32 input with the
# kernel of 1280 elements: the rest of the output is never written (examples/torch_npu_dynamic_numels.py).
# 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 keep the numels symbolic (the wrapper computes them).
# The record keeps these releases' kernels as they build them and makes them hold: before the substitution it guards
# each symbol of the numels equal to its hint (a ShapeEnv guard, which Dynamo installs with the graph's own), so a new
# size compiles a new graph. A size the user marked dynamic (torch._dynamo.mark_dynamic) cannot be pinned: Dynamo then
# raises its ConstraintViolationError naming it.
def _pins_first(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def initialize_range_tree(self: Any, *args: Any, **kwargs: Any) -> Any:
        from torch._inductor.virtualized import V

        pinned = pin_at_hints(V.graph.sizevars, list(self.numels.values()))
        if pinned:
            log.warning(
                "torch_npu's index kernel is built at the size hints: %s pinned (record %s; a new size recompiles, "
                "a size marked dynamic raises ConstraintViolationError)",
                ", ".join(f"{name}={value}" for name, value in pinned),
                NUMELS_AT_HINTS.id,
            )
        return original(self, *args, **kwargs)

    return initialize_range_tree


# With the symbols pinned, torch's map_kernel_groups_to_node_sizes matches a node's sizes to the kernel's numbers and
# passes them symbolic; torch_npu's split and tiling compare lengths as numbers, so split_and_set_ranges gets the
# node's sizes with the pin applied (sizevars.simplify).
def _sizes_as_pinned(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def split_and_set_ranges(self: Any, lengths: Sequence[Sequence[Any]], *args: Any, **kwargs: Any) -> Any:
        from torch._inductor.virtualized import V

        simplify = V.graph.sizevars.simplify
        return original(self, [[simplify(size) for size in group] for group in lengths], *args, **kwargs)

    return split_and_set_ranges


def numels_kept_symbolic() -> bool:
    """Whether the installed torch_npu's initialize_range_tree keeps a symbolic numel symbolic: its own method run on
    a stand-in kernel whose numel is rows*cols (two dynamic sizes); it fails past the numels (the stand-in has nothing
    else), and the buggy releases have by then replaced rows*cols by its value at the hints."""
    import sympy
    from torch._inductor.virtualized import V

    from npu_inductor_compat.common.fixes.torch_npu_split_ranges import probe_sizes

    sizes, rows, cols = probe_sizes()
    kernel = SimpleNamespace(numels={"x": rows * cols, "r": sympy.S.One}, inside_reduction=False)
    with V.set_graph_handler(SimpleNamespace(sizevars=sizes)):  # type: ignore[arg-type]
        try:
            torch_npu_names.as_written("index-kernel-range-tree")(kernel, None)
        except (AttributeError, KeyError, TypeError):
            pass  # past the numels: the stand-in kernel has no range trees
    return not isinstance(kernel.numels["x"], (int, sympy.Integer))


NUMELS_AT_HINTS = Patch(
    id="torch-npu-numels-pinned",
    proven_by=(
        "tests/common/fixes/test_torch_npu_hint_numels.py::test_a_dynamic_graph_at_a_new_size_runs_a_kernel_of_that_size",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel replaces each symbolic numel by its value at the size hints and adds no guard: a "
        "dynamic graph (torch.compile(dynamic=True), a dynamic BERT) launches its kernels with the first call's "
        "numels at every later size, so part of each output is never written; the record guards those sizes at "
        "their hints (a new size recompiles) and hands torch_npu's split the pinned sizes"
    ),
    upstream=(
        "2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 keep the numels symbolic; 2.8.0.post5, 2.9.1, "
        "2.11.0.post3 and 2.12.0.post3 substitute the hints (codegen/triton.py initialize_range_tree); report text "
        "in docs/torch-npu-reports.md"
    ),
    remove_when="every torch_npu release in use keeps a kernel's numels symbolic (the probe then says not needed)",
    changes=(
        Change(RANGE_TREE, _pins_first, optional=True),
        Change(SET_RANGES, _sizes_as_pinned, optional=True),
    ),
    upstream_has_fix=numels_kept_symbolic,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (NUMELS_AT_HINTS,)

__all__ = ["FIXES", "NUMELS_AT_HINTS", "numels_kept_symbolic", "pin_at_hints"]
