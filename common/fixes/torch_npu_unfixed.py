"""Fix records for bugs in torch_npu's newest releases (2.13.0, 2.14.0 and its master) that no torch_npu has fixed.
Like ``torch_npu_backports.py``, each probes the installed code by running it on a minimal case, never by version."""

# Importing this module imports no torch or torch_npu module; the records' callables do, when applied or probed.

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.fixes.torch_npu_backports import is_size_symbol
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.targets import Target

# ------------------------------------------------------------------------- size symbols in a masked subblock's mask
# torch_npu's masked() (codegen/triton.py NPUTritonKernelOverrides.masked) ands "<axis>_mask" into a masked subblock's
# mask for every symbol its index uses (LoopBody.masked_indexing, codegen/ir.py generate_masked_indexing), size
# symbols included. 2.7.1.post11 and 2.9.0.post9 skip names starting with "s"; 2.13.0, 2.14.0 and master 9e73e708 do
# not, so torch's sympy_index_symbol("s0_mask") asserts (a shape symbol is not an index) and torch_npu silently falls
# back from its linear index kernel to the no_linear one for any cat or slice_scatter over a dynamic dimension.
MASKED = torch_npu_names.qualname("index-overrides-masked")


def _without_size_symbols(original: Any) -> Any:
    """masked() with the subblock's recorded symbols minus size symbols for the call (nested subblocks too), as
    2.9.0.post9 skips them; the recorded table is put back afterwards. A staticmethod, as masked() is in torch_npu
    and in torch (where the class inherits torch's, ``original`` is the plain function)."""
    function = original.__func__ if isinstance(original, staticmethod) else original

    @wraps_original(function)
    def masked(mask: Any, body: Any, other: Any) -> Any:
        loop_body: Any = getattr(body, "body", None)
        recorded = getattr(loop_body, "masked_indexing", None)
        if not isinstance(recorded, dict) or not any(
            is_size_symbol(name) for axes in recorded.values() for name in axes
        ):
            return function(mask, body, other)
        loop_body.masked_indexing = {
            block: {name for name in axes if not is_size_symbol(name)} for block, axes in recorded.items()
        }
        try:
            return function(mask, body, other)
        finally:
            loop_body.masked_indexing = recorded

    return staticmethod(masked)


def masked_skips_size_symbols() -> bool:
    """Whether the installed torch_npu's masked() leaves size symbols out of a subblock's mask: its own code run on
    a subblock whose index uses the axis x0 and the size symbol s0 (AssertionError from torch's sympy_index_symbol
    when it does not)."""
    from torch._inductor.virtualized import V

    owner, name = Target.parse(MASKED).owner()
    if name not in vars(owner):  # torch_npu keeps torch's masked(), which ands no subblock axis masks (2.12.0.post3)
        return True
    masked = getattr(owner, name)

    @contextlib.contextmanager
    def mask_loads(mask: Any, value: Any) -> Iterator[Any]:
        yield mask

    class Subblock(SimpleNamespace):  # a LoopBody subblock: its graph, its LoopBody, and called for its value
        def __call__(self) -> Any:
            return SimpleNamespace(mask_vars=set())

    body = Subblock(graph=SimpleNamespace(find_nodes=lambda op: []))
    body.body = SimpleNamespace(
        subblocks={"masked_subblock1": body}, masked_indexing={"masked_subblock1": {"x0", "s0"}}
    )
    kernel = SimpleNamespace(current_subblock_axis=set(), mask_loads=mask_loads)
    handler = SimpleNamespace(logical_and=lambda left, right: f"({left} & {right})")
    with V.set_kernel_handler(kernel), V.set_ops_handler(handler):  # type: ignore[arg-type]
        try:
            masked("tmp0", body, 0.0)
        except AssertionError:
            return False
    return True


MASKED_SUBBLOCK_SIZE_SYMBOLS = Patch(
    id="torch-npu-masked-subblock-size-symbols",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_torch_npus_kernels_show_each_bug_without_its_record_and_not_with_it",
    ),
    layer="fix",
    why=(
        "torch_npu's masked() ands an axis mask for every symbol of a masked subblock's index, size symbols "
        "included: torch's sympy_index_symbol asserts on 's0_mask' and torch_npu silently drops its linear index "
        "kernel for the no_linear one on every cat or slice_scatter over a dynamic dimension"
    ),
    upstream=(
        "torch_npu 2.7.1.post11 and 2.9.0.post9 skip names starting with 's' there; 2.13.0, 2.14.0 and master "
        "9e73e708 lost it (codegen/triton.py NPUTritonKernelOverrides.masked); report text in "
        "docs/torch-npu-reports.md"
    ),
    remove_when="every torch_npu release in use skips size symbols in masked() (the probe then says not needed)",
    changes=(Change(MASKED, _without_size_symbols, optional=True),),
    upstream_has_fix=masked_skips_size_symbols,
    patches_package="torch_npu",
)


# ------------------------------------------------------------------------ torch 2.14's strict_sum in make_reduction
# torch 2.14.0's sum lowering (torch/_inductor/lowering.py sum_) passes make_reduction a keyword strict_sum, which is
# True only for a CUDA tensor under config.numerics == "strict" (_strict_sum_layout_eligible). torch_npu replaces
# lowering.make_reduction with its own (torch_npu/_inductor/lowering.py and _inductor/__init__.py; 2.14.0 and master
# 9e73e708), which takes no strict_sum: every sum lowering then fails with TypeError.
MAKE_REDUCTION = "torch._inductor.lowering:make_reduction"
STRICT_SUM = "strict_sum"


def _accepting_strict_sum(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch_npu's make_reduction, also taking torch's strict_sum: dropped when False (never True for an NPU tensor,
    nor for a CPU one); a strict sum it cannot honour is refused naming it rather than summed another way."""

    @wraps_original(original)
    def make_reduction(reduction_type: Any, override_return_dtype: Any = None, **kwargs: Any) -> Any:
        if kwargs.pop(STRICT_SUM, False):
            raise NotImplementedError(
                f"torch asked make_reduction({reduction_type!r}) for a strict (ordered) sum, which torch_npu's "
                "make_reduction cannot do (strict sums are for CUDA tensors under config.numerics='strict')"
            )
        return original(reduction_type, override_return_dtype, **kwargs)

    return make_reduction


def make_reduction_takes_strict_sum() -> bool:
    """Whether the installed lowering.make_reduction takes what torch's sum lowering passes it: True when torch's
    sum lowering passes no strict_sum (before torch 2.14), else whether calling it with ``strict_sum=False`` works
    (torch's own does; torch_npu 2.14.0's replacement raises TypeError)."""
    import inspect

    import torch
    from torch._inductor import lowering

    sum_lowering = inspect.unwrap(lowering.lowerings[torch.ops.aten.sum.dim_IntList])
    if STRICT_SUM not in sum_lowering.__code__.co_varnames:
        return True
    try:
        lowering.make_reduction("sum", strict_sum=False)
    except TypeError:
        return False
    return True


MAKE_REDUCTION_STRICT_SUM = Patch(
    id="torch-npu-make-reduction-strict-sum",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fixes.py::test_without_the_strict_sum_record_torch_npus_make_reduction_fails_every_sum",
    ),
    layer="fix",
    why=(
        "torch 2.14's sum lowering passes make_reduction a strict_sum keyword; torch_npu replaces make_reduction with "
        "one that takes none, so every sum (on any device) fails to lower with TypeError"
    ),
    upstream=(
        "not fixed in torch_npu (2.14.0 and master 9e73e708: torch_npu/_inductor/lowering.py make_reduction); "
        "report text in docs/torch-npu-reports.md"
    ),
    remove_when="torch_npu's make_reduction takes strict_sum (the probe then says not needed)",
    # torch's own name (torch_npu puts its function there): without torch_npu the probe finds torch's, which takes it
    changes=(Change(MAKE_REDUCTION, _accepting_strict_sum),),
    upstream_has_fix=make_reduction_takes_strict_sum,
)

FIXES: tuple[Patch, ...] = (MASKED_SUBBLOCK_SIZE_SYMBOLS, MAKE_REDUCTION_STRICT_SUM)

__all__ = [
    "FIXES",
    "MAKE_REDUCTION_STRICT_SUM",
    "MASKED_SUBBLOCK_SIZE_SYMBOLS",
    "make_reduction_takes_strict_sum",
    "masked_skips_size_symbols",
]
