"""torch 2.7.x's in-place buffer reuse check looks up users that dead-code elimination removed: ``KeyError: 'opN'``.
The record makes that check skip such users, as torch 2.8 does (pytorch PR 151424). Imports torch only when used.
"""

from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

SCHEDULER = "torch._inductor.scheduler"
DECIDE = f"{SCHEDULER}:BaseSchedulerNode.decide_inplace_update"
CHECK = "single_index_in_fused_node"  # the nested check of decide_inplace_update (torch 2.7: pytorch PR 150845)


class _RemovedUser:
    """Answers the fused-node lookup of a user the scheduler no longer has: never the node being generated, so
    the check passes over it (torch 2.8's check skips a user missing from ``name_to_fused_node``)."""


REMOVED_USER = _RemovedUser()


def skipping_removed_users(original: Any) -> Any:
    """``decide_inplace_update`` whose nested check answers a removed user with REMOVED_USER instead of raising.

    torch 2.7.1 (``torch/_inductor/scheduler.py``, ``decide_inplace_update``): before reusing an input buffer for a
    node's output, ``single_index_in_fused_node`` walks every user of that buffer and asks the scheduler for each
    one's fused node. ``buffer.users`` still lists users that dead-code elimination dropped (the unused count output
    of a Welford reduction in batch norm's backward, for one) while ``Scheduler.name_to_fused_node`` no longer has
    them. The scheduler's lookup is shadowed on the instance for this one call, and put back after."""

    @wraps_original(original)
    def decide_inplace_update(self: Any) -> Any:
        scheduler = self.scheduler
        own = vars(scheduler)
        shadowed = own.get("get_fused_node", REMOVED_USER)
        lookup = scheduler.get_fused_node

        def get_fused_node(node: Any) -> Any:
            if node.get_first_name() not in scheduler.name_to_fused_node:
                return REMOVED_USER
            return lookup(node)

        scheduler.get_fused_node = get_fused_node
        try:
            return original(self)
        finally:
            if shadowed is REMOVED_USER:
                del scheduler.get_fused_node
            else:
                scheduler.get_fused_node = shadowed

    return decide_inplace_update


def check_skips_removed_users() -> bool:
    """Feature detection: the nested check tests membership in ``name_to_fused_node`` before the lookup (torch >=
    2.8), or there is no nested check walking the users (nothing looks a removed user up)."""
    scheduler = importlib.import_module(SCHEDULER)
    code = inspect.unwrap(scheduler.BaseSchedulerNode.decide_inplace_update).__code__  # torch's, if applied
    nested = [const for const in code.co_consts if isinstance(const, types.CodeType) and const.co_name == CHECK]
    return all("name_to_fused_node" in check.co_names for check in nested)


INPLACE_SKIPS_REMOVED_USERS = Patch(
    id="inplace-skips-removed-users",
    proven_by=(
        "tests/lines/test_inplace_removed_users.py::test_without_the_fix_the_backward_stops_with_torchs_key_error",
        "tests/lines/test_inplace_removed_users.py::test_with_the_fix_a_conv_batch_norm_training_step_generates_both_graphs",
    ),
    layer="fix",
    why=(
        "torch 2.7's in-place buffer reuse check looks up every user of the buffer, including users dead-code "
        "elimination removed: a training step with batch norm (ResNet-18's backward) stops with KeyError 'opN'"
    ),
    upstream=(
        "pytorch issue 151423, fixed by PR 151424 in torch 2.8 (scheduler.py single_index_in_fused_node); torch_npu's "
        "v2.7.1 branch only misses it because its var_mean lowering makes no Welford reduction (_inductor/lowering.py)"
    ),
    remove_when="MIN_SUPPORTED >= (2, 8): the check skips users missing from name_to_fused_node",
    lines=("v2_7_1",),
    changes=(Change(DECIDE, skipping_removed_users),),
    upstream_has_fix=check_skips_removed_users,
)

FIXES = (INPLACE_SKIPS_REMOVED_USERS,)
