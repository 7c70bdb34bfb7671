"""Fix records for torch_npu's own iteration-range split (NPUIndexTritonKernel._split_iteration_ranges): symbolic
sizes compared as Python bools, and CantSplit raised without the arguments torch 2.11 requires."""

# Importing this module imports no torch or torch_npu module; the records' callables do, when applied or probed.
# Like torch_npu_backports.py, each probe runs the installed torch_npu's own code on a minimal case, never a version
# test.

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.targets import Target

SPLIT = torch_npu_names.qualname("index-kernel-split-ranges")
CANT_SPLIT = torch_npu_names.qualname("index-kernel-cant-split")


def _module() -> Any:
    return Target.parse(SPLIT).import_module()


def _cant_split(expr: Any, remaining: Any) -> BaseException:
    """The CantSplit torch_npu's module catches (its is_compatible looks the name up there), with torch's arguments
    (torch 2.11 requires them; before, CantSplit is a plain Exception and takes them as its args)."""
    error: BaseException = _module().CantSplit(expr, remaining)
    return error


# ---------------------------------------------------------------------------- symbolic sizes compared statically
# torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 (codegen/triton.py NPUIndexTritonKernel.
# _split_iteration_ranges, its nested add_multiple_range) loop `while remaining[group] > 1 and remained_size > 1`: with
# dynamic shapes a group's size is symbolic, the comparison a sympy relation with no truth value, and the compile
# fails with TypeError inside the scheduler's can_fuse. Their other branches (2.7.1.post11, 2.9.0.post9, 2.10.0.post7,
# 2.13.0, 2.14.0) ask the size allocator (statically_known_gt). These releases cut ranges at the node sizes' hints
# (their kernels' range trees are built from hints too): the function below keeps those rules, in our own code, and
# only decides the two comparisons statically (torch-npu-numels-pinned guards the hints, so the ranges hold).
def _split_decided_statically(
    groups: Sequence[Any], lengths: Sequence[Sequence[Any]]
) -> tuple[list[list[Any]], list[Any]]:
    """Map each node size of ``lengths`` (by its hint) onto the kernel's range groups (their numels), cutting a size
    that spans several groups into one range per group: the new ranges per group and, per length group, the getters
    from the flat range variables to each size's index. A split the size allocator cannot prove raises CantSplit."""
    import sympy
    from torch._inductor.virtualized import V
    from torch.utils._sympy.functions import FloorDiv

    sizes = V.graph.sizevars
    hint = getattr(sizes, "optimization_hint", None) or sizes.size_hint  # torch 2.12 renamed it
    exact_hint = getattr(sizes, "guarding_hint_or_throw", hint)
    left = [sizes.simplify(sympy.Mul(*group) if isinstance(group, (list, tuple)) else group) for group in groups]
    ranges: list[list[Any]] = [[] for _ in left]
    variables = itertools.count()

    def take(group: int, size: Any) -> int:
        size = sizes.simplify(size)
        if not sizes.statically_known_multiple_of(left[group], size):
            raise _cant_split(size, left[group])
        left[group] = FloorDiv(left[group], size)
        ranges[group].append(size)
        return next(variables)

    def spanning(size: int, first: int) -> Callable[[Sequence[Any]], Any]:
        parts: list[tuple[Any, int]] = []  # (stride, flat variable) per group the size covers
        rest, group = size, first
        while group < len(left) and sizes.statically_known_gt(left[group], 1) and sizes.statically_known_gt(rest, 1):
            part = left[group]
            if not sizes.statically_known_multiple_of(rest, part):
                raise _cant_split(rest, part)
            variable = take(group, part)
            rest = FloorDiv(rest, part)
            parts.append((rest, variable))
            group += 1
        if rest != 1:
            raise _cant_split(size, left[first])
        return lambda flat: sympy.Add(*(stride * flat[variable] for stride, variable in parts))

    getters: list[list[Callable[[Sequence[Any]], Any]]] = []
    current = 0
    for length_group in lengths:
        found: list[Callable[[Sequence[Any]], Any]] = []
        for size in length_group:
            if sizes.statically_known_equals(size, 1):
                found.append(lambda _flat: sympy.S.Zero)
                continue
            while current < len(left) and hint(left[current]) == 1:
                current += 1  # the next group with elements left
            if current >= len(left):
                raise _cant_split(size, sympy.S.One)
            size_hint = hint(size)
            if size_hint > hint(left[current]):
                found.append(spanning(size_hint, current))
            else:
                found.append(operator.itemgetter(take(current, size_hint)))
        getters.append(found)
    if not all(exact_hint(size) == 1 for size in left):
        raise RuntimeError(f"torch_npu's range split left {left} of the groups {list(groups)} unassigned")
    return ranges, getters


def _statically_decided(original: Any) -> Any:
    return staticmethod(wraps_original(original)(_split_decided_statically))


def _torch_npus_split() -> Callable[..., Any]:
    """torch_npu's own split function (under this module's replacement, when that is applied)."""
    split: Callable[..., Any] = torch_npu_names.as_written("index-kernel-split-ranges")
    return split


def probe_sizes() -> tuple[Any, Any, Any]:
    """A size allocator with two dynamic sizes (hints 4 and 8, ranges from 2 as Dynamo gives them)."""
    from torch._dynamo.source import ConstantSource
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    shape_env = ShapeEnv()
    first = shape_env.create_symbol(4, ConstantSource("npu_inductor_compat_rows"))
    second = shape_env.create_symbol(8, ConstantSource("npu_inductor_compat_cols"))
    return SizeVarAllocator(shape_env), first, second


def split_decides_symbolic_sizes() -> bool:
    """Whether the installed torch_npu's split decides a size spanning two dynamic groups (a pointwise node of
    rows*cols elements beside a kernel tiled rows x cols, as in a dynamic layer norm): its own function run on it;
    the buggy releases raise "cannot determine truth value of Relational"."""
    from torch._inductor.virtualized import V

    split = _torch_npus_split()
    sizes, rows, cols = probe_sizes()
    with V.set_graph_handler(SimpleNamespace(sizevars=sizes)):  # type: ignore[arg-type]
        try:
            split([rows, cols], [[rows * cols], []])
        except TypeError as err:
            if "Relational" in str(err):
                return False
            raise
        except _module().CantSplit:
            pass  # decided (the releases that cut at hints refuse it; the others split it)
    return True


SPLIT_SYMBOLIC_SIZES = Patch(
    id="torch-npu-split-symbolic-sizes",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_torch_npus_range_split_fails_without_its_records_where_they_apply",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel splits iteration ranges with `remaining[group] > 1` on symbolic sizes: with dynamic "
        "shapes (a dynamic BERT, a layer norm over a dynamic batch) the compile fails in can_fuse with 'cannot "
        "determine truth value of Relational', and its ranges are cut at the sizes' hints"
    ),
    upstream=(
        "fixed on torch_npu's 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 (statically_known_gt on "
        "symbolic sizes); missing from 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 (codegen/triton.py "
        "_split_iteration_ranges); report text in docs/torch-npu-reports.md"
    ),
    remove_when="every torch_npu release in use decides the split statically (the probe then says not needed)",
    changes=(Change(SPLIT, _statically_decided, optional=True),),
    upstream_has_fix=split_decides_symbolic_sizes,
    patches_package="torch_npu",
)


# ------------------------------------------------------------------------------------ CantSplit with torch 2.11's args
# torch 2.11 gave torch._inductor.codegen.simd.CantSplit a required (expr, remaining). torch_npu 2.11.0.post3,
# 2.12.0.post3, 2.13.0 and 2.14.0 raise it bare in _split_iteration_ranges (the name bound in codegen/triton.py): the
# TypeError escapes their is_compatible, which catches only CantSplit, and a split that should be refused fails the
# compile.
def _constructible_bare(original: type) -> type:
    """A CantSplit of torch's that torch_npu can raise without arguments (then expr and remaining are unknown)."""

    class CantSplit(original):  # type: ignore[valid-type,misc]
        def __init__(self, expr: Any = None, remaining: Any = None) -> None:
            super().__init__(expr, remaining)

        def __str__(self) -> str:
            if getattr(self, "expr", None) is None:
                return "torch_npu cannot split the iteration ranges"
            return str(super().__str__())

    CantSplit.__qualname__ = original.__qualname__
    return wraps_original(original)(CantSplit)


def cant_split_raised_right() -> bool:
    """Whether the installed torch_npu's split refuses a split it cannot make with a CantSplit torch accepts: its
    own function run on a size 3 against a group of 4 (torch_npu 2.11.0.post3+ on torch 2.11+: TypeError)."""
    from torch._inductor.virtualized import V

    module = _module()
    try:
        module.CantSplit()
    except TypeError:
        pass
    else:
        return True  # torch before 2.11: CantSplit takes no arguments, a bare raise is right
    sizes, _, _ = probe_sizes()
    with V.set_graph_handler(SimpleNamespace(sizevars=sizes)):  # type: ignore[arg-type]
        try:
            _torch_npus_split()([4], [[3], []])
        except module.CantSplit:
            return True
        except TypeError as err:
            if "CantSplit" in str(err):
                return False
            raise
    raise RuntimeError("torch_npu's range split cut a size of 3 out of a group of 4")


CANT_SPLIT_ARGUMENTS = Patch(
    id="torch-npu-cant-split-arguments",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_torch_npus_own_split_refuses_with_a_cant_split_torch_accepts_under_the_record",
    ),
    layer="fix",
    why=(
        "torch 2.11's CantSplit takes (expr, remaining); torch_npu raises it without them, so a refused split becomes "
        "a TypeError that escapes its is_compatible and fails the compile (transformers Llama, dynamic BERT)"
    ),
    upstream=(
        "not fixed in torch_npu: 2.11.0.post3, 2.12.0.post3, 2.13.0, 2.14.0 and master 9e73e708 raise CantSplit bare "
        "(codegen/triton.py _split_iteration_ranges); report text in docs/torch-npu-reports.md"
    ),
    remove_when="torch_npu raises CantSplit with its arguments (the probe then says not needed)",
    changes=(Change(CANT_SPLIT, _constructible_bare, optional=True),),
    upstream_has_fix=cant_split_raised_right,
    patches_package="torch_npu",
)

# CantSplit first: the split record's function raises the CantSplit bound in torch_npu's module, whichever it is
FIXES: tuple[Patch, ...] = (CANT_SPLIT_ARGUMENTS, SPLIT_SYMBOLIC_SIZES)

__all__ = [
    "CANT_SPLIT_ARGUMENTS",
    "FIXES",
    "SPLIT_SYMBOLIC_SIZES",
    "cant_split_raised_right",
    "probe_sizes",
    "split_decides_symbolic_sizes",
]
