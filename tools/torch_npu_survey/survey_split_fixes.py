"""Survey checks for the range-split records (common/fixes/torch_npu_split_ranges.py): whether a torch_npu release's own
code already carries the fix. Each returns (carried, evidence); survey_detectors.FIX_DETECTORS lists them."""

from __future__ import annotations

import ast

from packaging.version import Version

from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    INDEX_KERNEL_FILE,
    Sources,
    dotted,
    index_kernel_method,
)

CANT_SPLIT_ARGUMENTS_TORCH = Version("2.11")  # torch's CantSplit takes (expr, remaining) from 2.11.0 on
ORDERING = (ast.Gt, ast.GtE, ast.Lt, ast.LtE)


def split_compares_statically(sources: Sources) -> tuple[bool, str]:
    found = index_kernel_method(sources, "_split_iteration_ranges")
    if not isinstance(found, ast.FunctionDef):
        return (True, found or "no NPUIndexTritonKernel._split_iteration_ranges of torch_npu's")
    # the bug: an ordering comparison written on a group's size, `remaining[group] > 1`
    for node in ast.walk(found):
        if isinstance(node, ast.Compare) and any(isinstance(op, ORDERING) for op in node.ops):
            operands = (node.left, *node.comparators)
            if any(isinstance(part, ast.Subscript) and dotted(part.value) == "remaining" for part in operands):
                return (False, f"_split_iteration_ranges compares a symbolic size in Python: {ast.unparse(node)}")
    return (True, "_split_iteration_ranges compares no group size with a Python operator (statically_known_*)")


def cant_split_raised_with_arguments(sources: Sources) -> tuple[bool, str]:
    tree = sources.tree(INDEX_KERNEL_FILE)
    bare = [
        node.lineno
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, ast.Raise)
        and node.exc is not None
        and dotted(node.exc) == "CantSplit"
        and not (isinstance(node.exc, ast.Call) and (node.exc.args or node.exc.keywords))
    ]
    if not bare:
        return (True, f"{INDEX_KERNEL_FILE} raises CantSplit only with arguments (or not at all)")
    if sources.torch is not None and Version(sources.torch) < CANT_SPLIT_ARGUMENTS_TORCH:
        return (True, f"it raises CantSplit bare, which torch {sources.torch}'s CantSplit (no arguments) allows")
    return (False, f"it raises CantSplit bare (lines {bare[:3]}), which torch {sources.torch} rejects with TypeError")
