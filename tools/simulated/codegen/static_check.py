"""Every generated Triton kernel, checked without a compiler: it parses as Python and reads no name before defining it.

Runs on every codegen run (no triton-ascend needed); a kernel that fails it could never compile on an Ascend host.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterable
from typing import Any

BUILTINS = frozenset(dir(builtins))


class _Reads(ast.NodeVisitor):
    """Names a kernel function reads before any statement defines them, in statement order: a loop body sees what
    was defined before the loop and earlier in its body, each branch of an ``if`` what came before it (and after the
    ``if`` a name defined in any branch counts as defined, as Triton's code generator merges branches)."""

    def __init__(self, known: set[str]) -> None:
        self.defined = set(known)
        self.undefined: list[tuple[str, int]] = []

    def block(self, statements: Iterable[ast.stmt]) -> None:
        for statement in statements:
            self.visit(statement)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.defined and node.id not in BUILTINS:
                self.undefined.append((node.id, node.lineno))
        else:
            self.defined.add(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)  # the value is read before the targets are bound
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):  # x += 1 reads x first
            self.visit_Name(ast.Name(node.target.id, ast.Load(), lineno=node.lineno))
        self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self.visit(node.target)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        self.block(node.body)
        self.block(node.orelse)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self.block(node.body)
        self.block(node.orelse)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        before = set(self.defined)
        self.block(node.body)
        after_body = self.defined
        self.defined = set(before)
        self.block(node.orelse)
        self.defined |= after_body

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
        self.block(node.body)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # a nested helper: its name only
        self.defined.add(node.name)

    def _comprehension(self, node: Any) -> None:
        outer = set(self.defined)
        for generator in node.generators:
            self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.defined = outer

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer = set(self.defined)
        self.defined |= {arg.arg for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        self.visit(node.body)
        self.defined = outer


def _module_names(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level (imports, functions, classes, assignments, also inside its top-level
    if/try/for/with blocks; not inside function bodies)."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names


def check_source(source: str, kernel: str) -> list[str]:
    """Problems of one kernel module's source: a syntax error, or a name its kernel function reads before anything
    defines it (each message names the kernel, the name and the line)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        return [f"kernel {kernel}: not valid Python: {err.msg} (line {err.lineno})"]
    known = _module_names(tree)
    problems = []
    for node in tree.body:  # the kernel function (and any helper the module defines beside it)
        if not isinstance(node, ast.FunctionDef):
            continue
        arguments = node.args
        params = {arg.arg for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
        reads = _Reads(known | params)
        reads.block(node.body)
        seen = set()
        for name, line in reads.undefined:
            if name not in seen:
                seen.add(name)
                where = kernel if node.name == kernel else f"{kernel} ({node.name})"
                problems.append(f"kernel {where}: reads {name!r} before defining it (line {line})")
    return problems


def check(read: Callable[[str], str], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Check every Triton kernel the run wrote (from the summary's file index, each read with ``read``, given its
    path relative to --out); record the result in the summary (``static_check``) and return the failures."""
    failures = []
    checked = 0
    for graph in summary["graphs"]:
        for name, entry in graph["files"]["kernels"].items():
            if entry.get("defined_with") != "triton" or entry.get("source") is None:
                continue
            checked += 1
            problems = check_source(read(entry["source"]), name)
            if problems:
                failures.append({"graph": graph["index"], "kernel": name, "problems": problems})
    summary["static_check"] = {"kernels": checked, "failures": failures}
    return failures
