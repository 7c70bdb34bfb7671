"""Whether a torch_npu release still has each name this package hooks (the runtime's one table,
common/torch_npu_names.py), found in its sources with ``ast``, with a signature that takes our call."""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.common.torch_npu_names import Call, Hook
from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    Sources,
    SurveyError,
    binding,
    dotted,
    module_scope,
)


@dataclass(frozen=True)
class Found:
    where: str  # file (or namespace directory) in the wheel
    what: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    is_method: bool = False


def _resolve_relative(module: str, file: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if file.endswith("/__init__.py") else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _in_sources(sources: Sources, module: str) -> bool:
    """A torch_npu module with a Python file in the sources (not a C extension, not a namespace package)."""
    return module.split(".")[0] == "torch_npu" and sources.module_file(module) not in (None, f"{module}/")


def lookup(sources: Sources, module: str, qualname: str, depth: int = 0) -> Found | str:
    """Find ``module:qualname`` in the sources (following ``from x import y`` inside torch_npu); a reason if not."""
    file = sources.module_file(module)
    if file is None:
        base = module.replace(".", "/")
        return f"no module {module} ({base}.py / {base}/__init__.py absent)"
    if not qualname:
        return Found(file, "namespace package" if file.endswith("/") else "module")
    if file.endswith("/"):
        return f"{module} is a namespace package: it defines no {qualname}"
    tree = sources.tree(file)
    assert tree is not None
    first, *rest = qualname.split(".")
    bound = binding(tree.body, first)
    if bound is None:
        for star in module_scope(tree.body):  # `from .x import *` re-exports x's names
            if isinstance(star, ast.ImportFrom) and star.names[0].name == "*" and depth < 5:
                target = _resolve_relative(module, file, star)
                if _in_sources(sources, target):
                    found = lookup(sources, target, qualname, depth + 1)
                    if isinstance(found, Found):
                        return dataclasses.replace(found, what=f"{found.what} (re-exported by {file})")
        return f"{file} binds no top-level {first}"
    if isinstance(bound, ast.ImportFrom) and depth < 5:
        alias = next(a for a in bound.names if (a.asname or a.name) == first)
        target = _resolve_relative(module, file, bound)
        if _in_sources(sources, target):
            found = lookup(sources, target, ".".join([alias.name, *rest]), depth + 1)
            if isinstance(found, Found):
                return dataclasses.replace(found, what=f"{found.what} (re-exported by {file})")
            return found
        if not rest and sources.module_file(f"{target}.{alias.name}") is not None:
            return Found(file, f"submodule {target}.{alias.name}")
        return Found(file, f"imported from {target} (not in the Python sources)")
    if isinstance(bound, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
        if rest:
            return f"{file}: {first} is not a class defined there, so {'.'.join(rest)} cannot be checked"
        return Found(file, "assignment" if isinstance(bound, (ast.Assign, ast.AnnAssign)) else "import")
    node: ast.stmt = bound
    for index, part in enumerate(rest):
        if not isinstance(node, ast.ClassDef):
            return f"{file}: {'.'.join([first, *rest[:index]])} is not a class"
        inner = binding(node.body, part)
        if inner is None:
            return f"{file}: class {node.name} does not define {part} itself"
        node = inner
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        static = any(dotted(d) == "staticmethod" for d in getattr(node, "decorator_list", []))
        kind = "class" if isinstance(node, ast.ClassDef) else "method" if rest else "function"
        return Found(file, kind, node, is_method=bool(rest) and not static)
    return Found(file, "class attribute")


def _signature_text(args: ast.arguments) -> str:
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        names.append("*")
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(f"**{args.kwarg.arg}")
    return f"({', '.join(names)})"


def _accepts(node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool, call: Call) -> bool:
    """Whether ``node`` can be called with ``call``'s positional count and keywords (bound first when a method)."""
    args = node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = len(args.defaults)
    required = set(params[: len(params) - defaults])
    if is_method:
        if not params:
            return args.vararg is not None
        required.discard(params[0])
        params = params[1:]
    if call.positional > len(params) and args.vararg is None:
        return False
    filled = set(params[: call.positional])
    keyword_names = set(params[call.positional :]) | {a.arg for a in args.kwonlyargs}
    for keyword in call.keywords:
        if keyword not in keyword_names and args.kwarg is None:
            return False
        filled.add(keyword)
    required |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None}
    return required <= filled


@dataclass(frozen=True)
class HookResult:
    id: str
    present: bool
    found: str | None  # the candidate that satisfied it
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": "present" if self.present else "missing",
            "found": self.found,
            "detail": self.detail,
        }


def check_hook(sources: Sources, hook: Hook) -> HookResult:
    reasons = []
    for candidate in hook.candidates:
        target = Target.parse(candidate, attribute=False)
        try:
            found = lookup(sources, target.module, target.qualname)
        except SurveyError as err:
            reasons.append(f"{candidate}: {err}")
            continue
        if isinstance(found, str):
            reasons.append(f"{candidate}: {found}")
            continue
        detail = f"{found.what} in {found.where}"
        if hook.call is not None:
            if isinstance(found.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                signature = _signature_text(found.node.args)
                if not _accepts(found.node, found.is_method, hook.call):
                    wanted = f"{hook.call.positional} positional" + (
                        f" and keywords {', '.join(hook.call.keywords)}" if hook.call.keywords else ""
                    )
                    reasons.append(f"{candidate}: signature {signature} cannot take {wanted}")
                    continue
                detail += f", signature {signature}"
            else:
                detail += ", signature not checkable here"
        return HookResult(hook.id, True, candidate, detail)
    return HookResult(hook.id, False, None, "; ".join(reasons))
