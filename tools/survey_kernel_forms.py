"""Survey checks for the kernel-form records (common/kernel_forms.py): whether a torch_npu release's own code already
writes what triton-ascend lowers. Each returns (carried, evidence); survey_detectors.FIX_DETECTORS lists them."""

from __future__ import annotations

import ast

from npu_inductor_compat.tools.survey_sources import INDEX_KERNEL_FILE, LOWERING_FILE, Sources, dotted


def variance_without_welford(sources: Sources) -> tuple[bool, str]:
    tree = sources.tree(LOWERING_FILE)
    if tree is None:
        return (False, f"no {LOWERING_FILE}: torch's var_mean lowering takes Welford for looped reductions")
    helpers = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "var_mean_helper_"]
    if not helpers:
        return (False, "no var_mean lowering of its own: torch's takes Welford for looped reductions")
    called = {dotted(node.func) for helper in helpers for node in ast.walk(helper) if isinstance(node, ast.Call)}
    if any(name.endswith("var_mean_welford_") for name in called):
        return (False, "lowering.py var_mean_helper_ may take var_mean_welford_")
    return (True, "lowering.py var_mean_helper_ always takes the two-step var_mean_sum_")


def index_wrap_as_shift(sources: Sources) -> tuple[bool, str]:
    tree = sources.tree(INDEX_KERNEL_FILE)
    own = (
        []
        if tree is None
        else [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "indirect_indexing"]
    )
    if not own:
        return (False, "no indirect_indexing of its own: torch's wraps an index as where(i < 0, i + n, i)")
    for function in own:
        parameters = {arg.arg for arg in function.args.args}
        for node in ast.walk(function):  # where(lt, stm, var): the index itself is the value when not negative
            if isinstance(node, ast.Call) and dotted(node.func).endswith("where") and len(node.args) == 3:
                if isinstance(node.args[2], ast.Name) and node.args[2].id in parameters:
                    return (False, "codegen/triton.py indirect_indexing wraps where(i < 0, i + n, i)")
    return (True, "codegen/triton.py indirect_indexing wraps an index without where(i < 0, i + n, i)")
