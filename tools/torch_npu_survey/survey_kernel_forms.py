"""Survey checks for the kernel-form records (common/fixes/kernel_forms.py, the argreduce one of
torch_npu_backports.py): whether a release's own code already writes what triton-ascend lowers. Each returns (carried,
evidence); see FIX_DETECTORS."""

from __future__ import annotations

import ast
import re

from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    INDEX_KERNEL_FILE,
    LOWERING_FILE,
    Sources,
    dotted,
    module_scope,
)

RUNTIME_HELPERS_FILE = "torch_npu/_inductor/runtime/triton_helpers.py"
RUNTIME_PACKAGE = "torch_npu._inductor.runtime"
_HELPERS_IMPORT = re.compile(r"from\s+([\w.]+)\s+import\s+triton_helpers\b")  # in the kernel header it writes


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


def argreduce_reduces_twice(sources: Sources) -> tuple[bool, str]:
    imported = set(_HELPERS_IMPORT.findall(sources.text(INDEX_KERNEL_FILE) or ""))
    if imported != {RUNTIME_PACKAGE}:
        where = ", ".join(sorted(imported)) or "nowhere"
        return (
            False,
            f"its kernels import triton_helpers from {where}: torch's max_with_index, one two-operand reduce",
        )
    tree = sources.tree(RUNTIME_HELPERS_FILE)
    own = {node.name for node in module_scope(tree.body if tree else []) if isinstance(node, ast.FunctionDef)}
    if {"max_with_index", "min_with_index"} <= own:
        return (True, "its kernels' runtime/triton_helpers.py defines its own max_with_index and min_with_index")
    return (False, "its kernels' runtime/triton_helpers.py re-exports torch's max_with_index and min_with_index")
