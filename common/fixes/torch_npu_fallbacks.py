"""Fix record: torch_npu's implicit fallbacks under an environment that sets CI (GitHub Actions, GitLab, Jenkins).
torch's make_fallback raises there for any op with a decomposition; torch_npu sends such ops there on purpose."""

# Importing this module imports no torch or torch_npu module; the record's callables do, when applied or probed.

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

# torch/_inductor/graph.py GraphLowering.call_function: an op without a lowering gets one from make_fallback, the
# name graph.py imported from lowering.py (2.7.1 to 2.15.0). torch/_inductor/lowering.py make_fallback then raises
# AssertionError("make_fallback(op): a decomposition exists, ...") when os.getenv("CI") is set, warn is True and
# torch._decomp has a decomposition for the op: a check meant for PyTorch's own CI. torch_npu takes ops out of
# Inductor's decompositions and lowerings (decomposition.py: aten.gelu on 2.7.1.post11; lowering.py: aten.split on
# 2.9.1 and 2.12.0.post3) so that they run its eager NPU kernels: under CI=true every compile reaching one fails.
GRAPH_FALLBACK = "torch._inductor.graph:make_fallback"
TORCH_NPU_INDUCTOR = "torch_npu._inductor"
CI_VARIABLE = "CI"


def _without_the_ci_check(original: Callable[..., Any]) -> Callable[..., Any]:
    """graph.py's make_fallback with ``warn=False``: the fallback torch_npu meant, made the same way whether or not
    the environment sets CI (the decomposition assert and every other argument stay as given)."""

    @wraps_original(original)
    def make_fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) >= 2:  # (layout_constraint, warn, ...) given by position
            args = (args[0], False, *args[2:])
        else:
            kwargs["warn"] = False
        return original(op, *args, **kwargs)

    return make_fallback


def implicit_fallbacks_pass_under_ci() -> bool:
    """Whether nothing needs the record: torch_npu's Inductor is not loaded (stock Inductor reaches no implicit
    fallback of an op it decomposes), or graph.py's make_fallback reads no CI variable (no such check to meet)."""
    if TORCH_NPU_INDUCTOR not in sys.modules:
        return True
    import inspect

    from torch._inductor import graph

    function = inspect.unwrap(graph.make_fallback)
    return CI_VARIABLE not in function.__code__.co_consts


IMPLICIT_FALLBACK_UNDER_CI = Patch(
    id="torch-npu-implicit-fallback-under-ci",
    proven_by=(
        "tests/common/fixes/test_torch_npu_fallbacks.py::test_under_ci_torch_npus_fallbacks_fail_without_the_record",
    ),
    layer="fix",
    why=(
        "torch_npu takes ops such as gelu and split out of Inductor's decompositions and lowerings so that they run "
        "its NPU kernels; torch's implicit fallback for them raises 'a decomposition exists' whenever the "
        "environment sets CI (as GitHub Actions, GitLab and Jenkins do), so every such compile fails in CI"
    ),
    upstream=(
        "not fixed in torch_npu (2.7.1.post11 to 2.14.0: decomposition.py and lowering.py remove the entries and "
        "register no fallback); torch/_inductor/lowering.py make_fallback's CI check; report text in "
        "docs/torch-npu-reports.md"
    ),
    remove_when=(
        "torch's make_fallback stops reading CI (the probe then says not needed), or every torch_npu release in use "
        "registers a fallback for each op it takes out of Inductor's tables (the survey then says carried)"
    ),
    changes=(Change(GRAPH_FALLBACK, _without_the_ci_check),),
    upstream_has_fix=implicit_fallbacks_pass_under_ci,
)

FIXES: tuple[Patch, ...] = (IMPLICIT_FALLBACK_UNDER_CI,)

__all__ = ["FIXES", "IMPLICIT_FALLBACK_UNDER_CI", "implicit_fallbacks_pass_under_ci"]
