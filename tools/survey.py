"""Static survey of released torch_npu wheels: which of our fixes each release already carries, and whether every
torch_npu name this package hooks still exists with the signature it relies on.

``python -m npu_inductor_compat.tools.survey [--json] [--out FILE] [--fetch SPEC ...] [--all-lines] WHEEL_OR_DIR...``
reads each wheel's Python sources straight from the zip (or an unpacked ``torch_npu/`` tree) with ``ast`` and, where
the evidence is generated C++ text, regular expressions. torch_npu is never imported (it cannot be without an NPU
and CANN) and none of its code is copied. ``nox -s torch_npu_survey`` downloads the newest wheel of every line in
`SURVEY_LINES` into a cache (`WHEEL_CACHE_ENV`) and writes ``torch_npu_survey.md``.

What counts as "carried" is declared beside each fix id in `FIX_DETECTORS` (a test fails when a fix record has no
detector); the torch_npu names we hook are declared once in `TORCH_NPU_HOOKS` (a test fails when a torch_npu name
in the package source is not covered). A tool, not runtime code: it reads the runtime's table of hooked names
(``common/torch_npu_names.py``) and the fix records of every version module; it imports no torch.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import email.parser
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from npu_inductor_compat.common.torch_npu_names import TORCH_NPU_HOOKS, Call, Hook
from npu_inductor_compat.dispatch import LINES
from npu_inductor_compat.version import parse_release

WHEEL_CACHE_ENV = "NPU_INDUCTOR_COMPAT_WHEEL_CACHE"
# torch_npu release lines surveyed by `--all-lines` (the newest wheel of each). torch_npu publishes two 2.9 lines:
# 2.9.0.postN (for torch 2.9.0) and 2.9.1 (for torch 2.9.1, an older and smaller build).
SURVEY_LINES = ("2.7.1", "2.8.0", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0")
# Only the Python sources matter; one platform's wheel is enough.
WHEEL_PLATFORM = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


class SurveyError(Exception):
    """A wheel or directory could not be surveyed (not a torch_npu wheel, unreadable), or a download failed."""


# ------------------------------------------------------------------------------------------------ the sources
class Sources:
    """One torch_npu release's files, from a wheel (zip) or an unpacked directory holding ``torch_npu/``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        if path.is_dir():
            self._names = frozenset(
                str(item.relative_to(path)).replace(os.sep, "/") for item in path.rglob("*") if item.is_file()
            )
        else:
            try:
                self._zip = zipfile.ZipFile(path)
                self._names = frozenset(self._zip.namelist())
            except (OSError, zipfile.BadZipFile) as err:
                raise SurveyError(f"{path}: not a readable wheel (zip archive): {err}") from None
        if "torch_npu/__init__.py" not in self._names:
            raise SurveyError(f"{path}: holds no torch_npu/__init__.py: not a torch_npu wheel")
        self._dirs = frozenset(
            "/".join(parts[:depth])
            for parts in (name.split("/") for name in self._names)
            for depth in range(1, len(parts))
        )
        self.version, self.torch = self._metadata()
        self._trees: dict[str, ast.Module] = {}

    def _metadata(self) -> tuple[str, str | None]:
        found = sorted(name for name in self._names if re.fullmatch(r"torch_npu-[^/]+\.dist-info/METADATA", name))
        if not found:
            raise SurveyError(f"{self.path}: no torch_npu-*.dist-info/METADATA: not a torch_npu wheel")
        message = email.parser.Parser().parsestr(self.text(found[0]) or "", headersonly=True)
        version = message.get("Version")
        if message.get("Name", "").replace("-", "_").lower() != "torch_npu" or not version:
            raise SurveyError(f"{self.path}: {found[0]} does not describe a torch_npu release")
        torch = None
        for requirement in message.get_all("Requires-Dist") or []:
            match = re.match(r"torch\s*(?:\(\s*)?==\s*(\d+(?:\.\d+)*)", requirement)
            if match:
                torch = match.group(1)
        return str(version), torch

    def exists(self, name: str) -> bool:
        return name in self._names

    def is_dir(self, name: str) -> bool:
        return name in self._dirs

    def py_files(self, under: str) -> list[str]:
        return sorted(name for name in self._names if name.startswith(under) and name.endswith(".py"))

    def text(self, name: str) -> str | None:
        if name not in self._names:
            return None
        try:
            data = self._zip.read(name) if self._zip is not None else (self.path / name).read_bytes()
        except (OSError, zipfile.BadZipFile, KeyError) as err:
            raise SurveyError(f"{self.path}: cannot read {name}: {err}") from None
        return data.decode("utf-8-sig", errors="replace")

    def tree(self, name: str) -> ast.Module | None:
        if name not in self._trees:
            source = self.text(name)
            if source is None:
                return None
            try:
                self._trees[name] = ast.parse(source, filename=name)
            except (SyntaxError, ValueError) as err:
                raise SurveyError(f"{self.path}: cannot parse {name}: {err}") from None
        return self._trees[name]

    def module_file(self, module: str) -> str | None:
        """``a/b.py`` or ``a/b/__init__.py`` for ``a.b``; ``a/b/`` for a namespace package; None when absent."""
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in self._names:
                return candidate
        return f"{base}/" if base in self._dirs else None

    @property
    def torch_release(self) -> tuple[int, int, int]:
        return parse_release(self.torch or self.version)

    @property
    def line(self) -> str:
        release = self.torch_release
        for line in LINES:
            if line.covers(release):
                return line.module
        return LINES[-1].module if release >= LINES[-1].first else "unsupported"

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def _module_scope(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run when the module (or class body) runs: into if/try/with/loops, not into functions."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        children: list[ast.stmt] = []
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            children = [*node.body, *getattr(node, "orelse", [])]
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers: list[ast.ExceptHandler] = getattr(node, "handlers", [])
            children = [*getattr(node, "body", []), *(s for h in handlers for s in h.body)]
            children += [*getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
        stack.extend(reversed(children))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def _binding(body: Sequence[ast.stmt], name: str) -> ast.stmt | None:
    """The first statement in this scope that binds ``name``."""
    for node in _module_scope(body):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or (alias.name if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0])
                if bound == name:
                    return node
    return None


# ----------------------------------------------------------------------------------------------- hooked names
# The names themselves are the runtime's one table (common/torch_npu_names.py); the survey checks exactly those.


@dataclass(frozen=True)
class _Found:
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


def _lookup(sources: Sources, module: str, qualname: str, depth: int = 0) -> _Found | str:
    """Find ``module:qualname`` in the sources (following ``from x import y`` inside torch_npu); a reason if not."""
    file = sources.module_file(module)
    if file is None:
        base = module.replace(".", "/")
        return f"no module {module} ({base}.py / {base}/__init__.py absent)"
    if not qualname:
        return _Found(file, "namespace package" if file.endswith("/") else "module")
    if file.endswith("/"):
        return f"{module} is a namespace package: it defines no {qualname}"
    tree = sources.tree(file)
    assert tree is not None
    first, *rest = qualname.split(".")
    bound = _binding(tree.body, first)
    if bound is None:
        for star in _module_scope(tree.body):  # `from .x import *` re-exports x's names
            if isinstance(star, ast.ImportFrom) and star.names[0].name == "*" and depth < 5:
                target = _resolve_relative(module, file, star)
                if _in_sources(sources, target):
                    found = _lookup(sources, target, qualname, depth + 1)
                    if isinstance(found, _Found):
                        return dataclasses.replace(found, what=f"{found.what} (re-exported by {file})")
        return f"{file} binds no top-level {first}"
    if isinstance(bound, ast.ImportFrom) and depth < 5:
        alias = next(a for a in bound.names if (a.asname or a.name) == first)
        target = _resolve_relative(module, file, bound)
        if _in_sources(sources, target):
            found = _lookup(sources, target, ".".join([alias.name, *rest]), depth + 1)
            if isinstance(found, _Found):
                return dataclasses.replace(found, what=f"{found.what} (re-exported by {file})")
            return found
        if not rest and sources.module_file(f"{target}.{alias.name}") is not None:
            return _Found(file, f"submodule {target}.{alias.name}")
        return _Found(file, f"imported from {target} (not in the Python sources)")
    if isinstance(bound, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
        if rest:
            return f"{file}: {first} is not a class defined there, so {'.'.join(rest)} cannot be checked"
        return _Found(file, "assignment" if isinstance(bound, (ast.Assign, ast.AnnAssign)) else "import")
    node: ast.stmt = bound
    for index, part in enumerate(rest):
        if not isinstance(node, ast.ClassDef):
            return f"{file}: {'.'.join([first, *rest[:index]])} is not a class"
        inner = _binding(node.body, part)
        if inner is None:
            return f"{file}: class {node.name} does not define {part} itself"
        node = inner
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        static = any(_dotted(d) == "staticmethod" for d in getattr(node, "decorator_list", []))
        kind = "class" if isinstance(node, ast.ClassDef) else "method" if rest else "function"
        return _Found(file, kind, node, is_method=bool(rest) and not static)
    return _Found(file, "class attribute")


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
        module, _, qualname = candidate.partition(":")
        try:
            found = _lookup(sources, module, qualname)
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


# ------------------------------------------------------------------------------------------------- detectors
@dataclass(frozen=True)
class Finding:
    carried: bool
    evidence: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Detector:
    """What in torch_npu's sources shows that a release carries one of our fixes."""

    fix_id: str
    carried_when: str
    check: Callable[[Sources], Finding]


def _flex_files(sources: Sources) -> list[str]:
    return [name for name in sources.py_files("torch_npu/_inductor/kernel/") if "flex" in name.rsplit("/", 1)[-1]]


_FLEX_LOWERING = re.compile(r"register_lowering\(\s*torch\.ops\.higher_order\.flex_attention\s*[,)]")


def _own_flex_lowering(sources: Sources) -> list[str]:
    return [name for name in _flex_files(sources) if _FLEX_LOWERING.search(sources.text(name) or "")]


def _symbolic_grid_functions(tree: ast.Module) -> set[str]:
    names = set()
    for node in _module_scope(tree.body):
        if isinstance(node, ast.FunctionDef) and any(
            _dotted(d).endswith("SymbolicGridFn") for d in node.decorator_list
        ):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and _dotted(node.value).endswith("SymbolicGridFn"):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _backward_grid_is_symbolic(sources: Sources) -> Finding:
    symbolic: list[str] = []
    plain: list[str] = []
    for name in _flex_files(sources):
        tree = sources.tree(name)
        assert tree is not None
        grids = _symbolic_grid_functions(tree)
        short = name.removeprefix("torch_npu/_inductor/")
        for node in _module_scope(tree.body):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                grid: ast.expr | None = None
                if isinstance(target, ast.Attribute) and target.attr == "grid" and "backward" in _dotted(target.value):
                    grid, template = node.value, _dotted(target.value)
                elif isinstance(target, ast.Name) and "backward_template" in target.id:
                    template = target.id
                    if isinstance(node.value, ast.Call):
                        grid = next((k.value for k in node.value.keywords if k.arg == "grid"), None)
                if isinstance(grid, ast.Name):
                    (symbolic if grid.id in grids else plain).append(f"{short}: {template} grid {grid.id}")
    if symbolic and not plain:
        return Finding(True, "; ".join(symbolic) + " (@SymbolicGridFn)")
    if plain:
        return Finding(False, "plain (non-SymbolicGridFn) backward grid: " + "; ".join(plain))
    return Finding(False, "no flex backward template grid of its own (upstream's template and grid are used)")


_CUDA_CONFIG = re.compile(r"\b(get_device_capability|cuda\.get_device_properties|_get_nv_config)\b")


def _imports_from_torch_kernel(sources: Sources, names: set[str]) -> list[str]:
    found = []
    for file in _flex_files(sources):
        tree = sources.tree(file)
        assert tree is not None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch._inductor.kernel"):
                hits = names & {alias.name for alias in node.names}
                found += [f"{file.removeprefix('torch_npu/_inductor/')} imports {node.module}.{h}" for h in hits]
            elif isinstance(node, ast.Attribute) and node.attr in names and _dotted(node.value) != "self":
                found.append(f"{file.removeprefix('torch_npu/_inductor/')} uses {_dotted(node)}")
    return sorted(set(found))


def _configs_from_device(sources: Sources) -> Finding:
    lowering = _own_flex_lowering(sources)
    if not lowering:
        return Finding(False, "no flex_attention lowering of its own: torch's configs (torch.cuda) are used")
    asks = [
        f"{n.removeprefix('torch_npu/_inductor/')}: {m.group(1)}"
        for n in _flex_files(sources)
        if (m := _CUDA_CONFIG.search(sources.text(n) or ""))
    ]
    asks += _imports_from_torch_kernel(sources, {"_get_default_config_fwd", "_get_default_config_bwd"})
    where = ", ".join(n.removeprefix("torch_npu/_inductor/") for n in lowering)
    if asks:
        return Finding(
            False, f"own flex lowering ({where}) but it asks torch.cuda / torch's configs: {'; '.join(asks)}"
        )
    return Finding(True, f"own flex lowering ({where}) chooses configs without torch.cuda")


def _decoding_split_from_device(sources: Sources) -> Finding:
    lowering = _own_flex_lowering(sources)
    if not lowering:
        return Finding(False, "no flex_attention lowering of its own: torch's flex decoding (get_split_k) is used")
    uses = _imports_from_torch_kernel(sources, {"create_flex_decoding_kernel", "get_split_k"})
    where = ", ".join(n.removeprefix("torch_npu/_inductor/") for n in lowering)
    if uses:
        return Finding(False, f"own flex lowering ({where}) calls torch's flex decoding: {'; '.join(uses)}")
    return Finding(True, f"own flex lowering ({where}) without torch's create_flex_decoding_kernel / get_split_k")


def _two_pass_patched(sources: Sources) -> Finding:
    found = []
    for name in (*sources.py_files("torch_npu/_inductor/"), *sources.py_files("torch_npu/_compat/")):
        if "/ascendc/" in name or "codegen_with_cpp_wrapper" not in (sources.text(name) or ""):
            continue
        tree = sources.tree(name)
        assert tree is not None
        functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Name):
                continue
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "codegen_with_cpp_wrapper":
                    function = functions.get(node.value.id)
                    if function is not None and any(
                        isinstance(c, ast.Constant) and c.value == "npu" for c in ast.walk(function)
                    ):
                        found.append(f"{name.removeprefix('torch_npu/')}: {_dotted(target)} = {node.value.id}")
    if found:
        return Finding(True, "; ".join(found) + " (handles 'npu')")
    return Finding(False, "no replacement of GraphLowering.codegen_with_cpp_wrapper handling 'npu' (outside ascendc)")


def _hook(hook_id: str) -> Hook:
    return next(hook for hook in TORCH_NPU_HOOKS if hook.id == hook_id)


def _class_for(sources: Sources, hook_id: str) -> tuple[str, ast.ClassDef] | None:
    """The file and class node of the first candidate of a hook whose class is defined in the sources."""
    for candidate in _hook(hook_id).candidates:
        module, _, qualname = candidate.partition(":")
        found = _lookup(sources, module, qualname.split(".")[0])
        if isinstance(found, _Found) and isinstance(found.node, ast.ClassDef):
            return found.where, found.node
    return None


def _saved_param_keys(cls: ast.ClassDef, method: str) -> tuple[list[str], set[str]]:
    """String keys written by ``method`` and the self.methods it calls (transitively, within the class)."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    seen, queue, keys = [], [method], set()
    while queue:
        name = queue.pop(0)
        if name in seen or name not in methods:
            continue
        seen.append(name)
        for node in ast.walk(methods[name]):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    keys.add(node.slice.value)
            elif isinstance(node, ast.Call) and _dotted(node.func).startswith("self."):
                queue.append(_dotted(node.func).split(".", 1)[1])
    return seen, keys


def _autotuner_copies_metadata(sources: Sources) -> Finding:
    found = _class_for(sources, "autotuner-save-kernel")
    if found is None:
        return Finding(False, "no NPUCachingAutotuner class")
    file, cls = found
    chain, keys = _saved_param_keys(cls, "save_gpu_kernel")
    if not chain:
        return Finding(False, f"{file}: NPUCachingAutotuner defines no save_gpu_kernel")
    wanted = ("workspace_size", "lock_num", "sync_block_lock_layout", "lock_init_val")
    stored = [key for key in wanted if key in keys]
    where = f"{file.removeprefix('torch_npu/_inductor/')}: {' -> '.join(chain)}"
    if "workspace_size" in keys and ("lock_num" in keys or "sync_block_lock_layout" in keys):
        return Finding(True, f"{where} stores {', '.join(stored)}")
    return Finding(False, f"{where} stores {', '.join(stored) or 'neither workspace_size nor lock_num'}")


def _assigned_non_null(text: str, variable: str) -> bool:
    for match in re.finditer(rf"\b{variable}\s*=(?!=)\s*([^;\n]*)", text):
        if not re.match(r"(NULL|nullptr)\b", match.group(1).strip()):
            return True
    return False


def _cpp_wrapper_workspace_locks(sources: Sources) -> Finding:
    found = _class_for(sources, "cpp-wrapper")
    if found is None:
        return Finding(False, "no NPU C++ wrapper class (CppWrapperNpu)")
    file, _ = found
    text = sources.text(file) or ""
    short = file.removeprefix("torch_npu/_inductor/")
    workspace = "allocate_workspace" in text and _assigned_non_null(text, "workspace_addr")
    locks = _assigned_non_null(text, "sync_block_lock")
    if not (workspace and locks):
        passes_null = re.search(r"workspace_addr\s*=\s*NULL", text) and re.search(r"sync_block_lock\s*=\s*NULL", text)
        missing = [what for what, ok in (("workspace", workspace), ("locks", locks)) if not ok]
        how = "passes NULL workspace and lock pointers" if passes_null else f"allocates no {' or '.join(missing)}"
        return Finding(False, f"{short}: {how}")
    if re.search(r"\baclrtMem(setAsync|cpyAsync)\b", text):
        note = "lock init: stream-ordered, aclrtMemsetAsync/aclrtMemcpyAsync"
    elif re.search(r"\baclrtMemcpy\s*\(", text):
        note = "lock init: blocking aclrtMemcpy"
    else:
        note = "lock init: not found"
    return Finding(True, f"{short}: allocate_workspace for workspace and locks, both passed to the kernel", (note,))


def _ascendc_init(sources: Sources) -> str | None:
    return sources.text("torch_npu/_inductor/ascendc/__init__.py")


def _ascendc_lowering_only(sources: Sources) -> Finding:
    text = _ascendc_init(sources)
    if text is None:
        return Finding(False, "no ascendc package")
    patched = re.search(r"\.is_gpu\s*=(?!=)", text) is not None
    appended = re.search(r"GPU_TYPES\.append\(\s*[\"']npu", text) is not None
    if patched and not appended:
        return Finding(True, "ascendc/__init__.py replaces lowering.is_gpu; 'npu' not appended to GPU_TYPES")
    return Finding(False, f"ascendc/__init__.py: lowering.is_gpu replaced: {patched}, GPU_TYPES appended: {appended}")


def _ascendc_partition_hook(sources: Sources) -> Finding:
    text = _ascendc_init(sources)
    if text is None:
        return Finding(False, "no ascendc package")
    patched = re.search(
        r"patch_fn\(\s*Scheduler\s*,\s*[\"']should_partition[\"']|Scheduler\.should_partition\s*=", text
    )
    if patched and "scheduler_should_partition_override" in text:
        return Finding(True, "ascendc/__init__.py wraps Scheduler.should_partition via the backend's override")
    return Finding(False, "ascendc/__init__.py has no backend should_partition hook")


INDEX_KERNEL_FILE = "torch_npu/_inductor/codegen/triton.py"


def _index_kernel_method(sources: Sources, method: str) -> ast.FunctionDef | str | None:
    """torch_npu's ``NPUIndexTritonKernel.<method>``; a string saying what is absent when there is none."""
    tree = sources.tree(INDEX_KERNEL_FILE)
    if tree is None:
        return f"no {INDEX_KERNEL_FILE}"
    for node in _module_scope(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == "NPUIndexTritonKernel":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item
            return None
    return f"no NPUIndexTritonKernel in {INDEX_KERNEL_FILE}"


def _masked_load_keeps_guard(sources: Sources) -> Finding:
    found = _index_kernel_method(sources, "filter_masks")
    if isinstance(found, str) or found is None:
        return Finding(True, found or "NPUIndexTritonKernel has no filter_masks of its own")
    reads = [
        node for node in ast.walk(found) if isinstance(node, ast.Attribute) and node.attr == "current_subblock_axis"
    ]
    if not reads:
        return Finding(True, "filter_masks has no subblock-axis filter (it drops no guarding mask)")
    filtered = any(
        isinstance(node, ast.comprehension)
        and node.ifs
        and any(
            isinstance(part, ast.Attribute) and part.attr == "current_subblock_axis" for part in ast.walk(node.iter)
        )
        for node in ast.walk(found)
    )
    if filtered:
        return Finding(True, "filter_masks filters current_subblock_axis before its subset test (size symbols out)")
    return Finding(False, "filter_masks tests the subblock axes as recorded, size symbols included")


def _hint_thresholds(function: ast.FunctionDef) -> set[int]:
    """The thresholds a persistent-reduction heuristic gives ReductionHint.INNER (dict literals keyed by it)."""
    found: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                inner = key is not None and _dotted(key).endswith("ReductionHint.INNER")
                if inner and isinstance(value, ast.Constant) and isinstance(value.value, int):
                    found.add(value.value)
    return found


def _persistent_reduction_budget(sources: Sources) -> Finding:
    found = _index_kernel_method(sources, "should_use_persistent_reduction")
    if isinstance(found, str) or found is None:
        return Finding(True, found or "NPUIndexTritonKernel leaves persistent reductions to torch's heuristic")
    thresholds = _hint_thresholds(found)
    per_soc = any(
        isinstance(node, ast.Name | ast.Attribute) and _dotted(node).endswith("is_ascend950")
        for node in ast.walk(found)
    )
    if per_soc and min(thresholds, default=4096) <= 1024:
        return Finding(
            True, f"should_use_persistent_reduction: INNER thresholds {sorted(thresholds)}, per SoC (is_ascend950)"
        )
    return Finding(False, f"should_use_persistent_reduction: INNER threshold {sorted(thresholds)} on every SoC")


def _masked_skips_size_symbols(sources: Sources) -> Finding:
    tree = sources.tree(INDEX_KERNEL_FILE)
    if tree is None:
        return Finding(True, f"no {INDEX_KERNEL_FILE}")
    found = None
    for node in _module_scope(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == "NPUTritonKernelOverrides":
            found = next(
                (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "masked"), None
            )
    if found is None:
        return Finding(True, "no masked() of torch_npu's: torch's own, which ands no subblock axis masks")
    loops = [node for node in ast.walk(found) if isinstance(node, ast.For) and "_mask" in ast.unparse(node)]
    if not loops:
        return Finding(True, "masked() ands no per-axis masks of the subblock")
    # the size-symbol test: a comparison or call on the axis name with the constant "s" (sub_axis[0] != "s")
    skips = any(isinstance(part, ast.Constant) and part.value == "s" for loop in loops for part in ast.walk(loop))
    if skips:
        return Finding(True, "masked() skips names starting with 's' (size symbols) when it ands the axis masks")
    return Finding(False, "masked() ands '<name>_mask' for every symbol of the subblock's index, size symbols too")


LOWERING_FILE = "torch_npu/_inductor/lowering.py"
STRICT_SUM_TORCH = Version("2.14")  # torch's sum lowering passes make_reduction strict_sum from 2.14.0 on


def _make_reduction_takes_strict_sum(sources: Sources) -> Finding:
    tree = sources.tree(LOWERING_FILE)
    found = (
        None
        if tree is None
        else next(
            (
                node
                for node in _module_scope(tree.body)
                if isinstance(node, ast.FunctionDef) and node.name == "make_reduction"
            ),
            None,
        )
    )
    if found is None:
        return Finding(True, f"no make_reduction in {LOWERING_FILE}: torch's own stays")
    names = {arg.arg for arg in (*found.args.args, *found.args.kwonlyargs)}
    if "strict_sum" in names or found.args.kwarg is not None:
        return Finding(True, "torch_npu's make_reduction takes strict_sum")
    if sources.torch is not None and Version(sources.torch) < STRICT_SUM_TORCH:
        return Finding(True, f"its make_reduction takes no strict_sum, which torch {sources.torch} never passes")
    return Finding(False, f"its make_reduction takes no strict_sum, which torch {sources.torch}'s sum lowering passes")


FIX_DETECTORS: tuple[Detector, ...] = (
    Detector(
        "flex-backward-symbolic-grid",
        "a flex backward template of torch_npu's gets a @SymbolicGridFn grid (and none a plain one)",
        _backward_grid_is_symbolic,
    ),
    Detector(
        "flex-configs-from-device",
        "torch_npu registers its own flex_attention lowering and no flex module asks torch.cuda or torch's configs",
        _configs_from_device,
    ),
    Detector(
        "flex-decoding-split-from-device",
        "torch_npu's own flex lowering decodes without torch's create_flex_decoding_kernel / get_split_k",
        _decoding_split_from_device,
    ),
    Detector(
        "autotuner-kernel-metadata",
        "NPUCachingAutotuner.save_gpu_kernel (or what it calls) stores workspace_size and lock_num or "
        "sync_block_lock_layout in the kernel params",
        _autotuner_copies_metadata,
    ),
    Detector(
        "cpp-wrapper-workspace-locks",
        "the NPU C++ wrapper allocates workspace and lock memory and passes both (non-NULL) to the kernel",
        _cpp_wrapper_workspace_locks,
    ),
    Detector(
        "triton-cpp-wrapper-two-pass",
        "torch_npu replaces GraphLowering.codegen_with_cpp_wrapper with a function handling 'npu' (not only ascendc)",
        _two_pass_patched,
    ),
    Detector(
        "ascendc-lowering-gpu-like",
        "the ascendc package makes 'npu' GPU-like in lowering.is_gpu without appending it to GPU_TYPES",
        _ascendc_lowering_only,
    ),
    Detector(
        "ascendc-should-partition-hook",
        "the ascendc package wraps Scheduler.should_partition through scheduler_should_partition_override",
        _ascendc_partition_hook,
    ),
    Detector(
        "torch-npu-masked-load-size-symbols",
        "NPUIndexTritonKernel.filter_masks filters size symbols out of current_subblock_axis, or has no subblock-axis "
        "filter at all",
        _masked_load_keeps_guard,
    ),
    Detector(
        "torch-npu-persistent-reduction-ub",
        "NPUIndexTritonKernel.should_use_persistent_reduction allows at most 1024 INNER elements off Ascend950 (or "
        "the index kernel has no such heuristic of its own)",
        _persistent_reduction_budget,
    ),
    Detector(
        "torch-npu-masked-subblock-size-symbols",
        "NPUTritonKernelOverrides.masked skips size symbols when it ands a masked subblock's axis masks (or "
        "torch_npu keeps torch's masked)",
        _masked_skips_size_symbols,
    ),
    Detector(
        "torch-npu-make-reduction-strict-sum",
        "torch_npu's replacement of lowering.make_reduction takes strict_sum (or its torch, before 2.14, passes none)",
        _make_reduction_takes_strict_sum,
    ),
)


# ---------------------------------------------------------------------------------------------------- survey
@functools.cache
def _record_lines() -> dict[str, tuple[str, ...]]:
    """Fix id -> the torch lines its record is written for (imports the fix modules; no torch)."""
    from npu_inductor_compat.registry import fix_records

    return {record.id: record.applies_to() for record in fix_records()}


@dataclass
class ReleaseReport:
    torch_npu: str
    source: str
    torch: str | None
    line: str
    fixes: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def survey(path: Path) -> ReleaseReport:
    """Survey one wheel (or unpacked directory). Raises SurveyError naming the file when it is not usable."""
    sources = Sources(path)
    try:
        report = ReleaseReport(sources.version, str(path), sources.torch, sources.line)
        lines = _record_lines()
        for detector in FIX_DETECTORS:
            try:
                finding = detector.check(sources)
            except SurveyError as err:
                finding = Finding(False, f"could not check: {err}")
            needed = detector.fix_id not in lines or report.line in lines[detector.fix_id]
            report.fixes.append(
                {
                    "id": detector.fix_id,
                    "status": "carried" if finding.carried else "not carried",
                    "needed": needed,
                    "evidence": finding.evidence,
                    "notes": list(finding.notes),
                }
            )
        report.hooks = [check_hook(sources, hook).as_dict() for hook in TORCH_NPU_HOOKS]
        return report
    finally:
        sources.close()


def _release_key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def render(reports: Sequence[ReleaseReport], details: bool = True) -> str:
    ordered = sorted(reports, key=lambda r: _release_key(r.torch_npu))
    head = [f"{r.torch_npu} (torch {r.torch or '?'})" for r in ordered]
    out = ["### Fixes: carried by torch_npu itself?", ""]
    out += ["| fix | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for detector in FIX_DETECTORS:
        cells = []
        for report in ordered:
            fix = next(f for f in report.fixes if f["id"] == detector.fix_id)
            extra = [*fix["notes"], *([] if fix["needed"] else [f"n/a on {report.line}"])]
            cells.append(fix["status"] + (f" ({'; '.join(extra)})" if extra else ""))
        out.append(f"| `{detector.fix_id}` | " + " | ".join(cells) + " |")
    out += ["", "### Hooked torch_npu names: present with the signature we rely on?", ""]
    out += ["| name | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for hook in TORCH_NPU_HOOKS:
        cells = []
        for report in ordered:
            result = next(h for h in report.hooks if h["id"] == hook.id)
            alternative = len(hook.candidates) > 1 and result["found"] not in (None, hook.candidates[0])
            cells.append(result["status"] + (" (alt. layout)" if alternative else ""))
        out.append(f"| `{hook.id}` | " + " | ".join(cells) + " |")
    out += [
        "",
        "n/a: the fix's record is not written for that torch line (torch_npu's torch does not need it). "
        "alt. layout: found at the name's other location (see below).",
    ]
    if not details:
        return "\n".join(out)
    out += ["", "### What is checked", ""]
    out += [f"- `{d.fix_id}` is carried when {d.carried_when}." for d in FIX_DETECTORS]
    out += [f"- `{h.id}`: {' or '.join(f'`{c}`' for c in h.candidates)}; {h.used_by}." for h in TORCH_NPU_HOOKS]
    for report in ordered:
        out += ["", f"### torch_npu {report.torch_npu} (torch {report.torch or '?'}, {report.line})", ""]
        out += [f"- `{f['id']}`: {f['status']}: {f['evidence']}" for f in report.fixes]
        out += [f"- `{h['id']}`: {h['status']}: {h['detail']}" for h in report.hooks]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------- fetching
def cache_base() -> Path:
    """Where this project's caches live by default: $XDG_CACHE_HOME/npu-inductor-compat, else ~/.cache/...."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "npu-inductor-compat"


def default_cache_dir() -> Path:
    configured = os.environ.get(WHEEL_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return cache_base() / "torch_npu_wheels"


def _wheel_version(path: Path) -> str:
    return path.name.split("-")[1] if path.name.count("-") >= 4 else ""


def _matches(version: str, spec: str) -> bool:
    """``spec`` "2.9.0" is a line (2.9.0 and its post releases); "2.9.0.post9" an exact version."""
    try:
        wanted, got = Version(spec), Version(version)
    except InvalidVersion:
        return False
    if wanted.post is not None or wanted.pre is not None or wanted.dev is not None:
        return got == wanted
    return got.release == wanted.release and got.pre is None and got.dev is None


def cached_wheel(spec: str, cache: Path) -> Path | None:
    """The newest wheel in ``cache`` matching ``spec``."""
    found = [path for path in cache.glob("torch_npu-*.whl") if _matches(_wheel_version(path), spec)]
    return max(found, key=lambda path: Version(_wheel_version(path)), default=None)


def published_size(version: str, timeout: float = 10) -> int | None:
    """Bytes of the torch_npu ``version`` wheel pip would download (PyPI's JSON API, the platform in WHEEL_PLATFORM),
    or None when PyPI cannot be asked: only used to announce a download."""
    import urllib.request

    python_tag = "cp" + WHEEL_PLATFORM[1].replace(".", "")
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/torch-npu/{version}/json", timeout=timeout) as answer:
            files = json.load(answer).get("urls", [])
    except (OSError, ValueError):
        return None
    for item in files:
        name = str(item.get("filename", ""))
        if f"-{python_tag}-" in name and "x86_64" in name and isinstance(item.get("size"), int):
            return int(item["size"])
    return None


def _pip() -> list[str]:
    # Asked of the distribution metadata: importlib.util.find_spec("pip") would run setuptools' distutils hack,
    # which then breaks any later `import setuptools` (torch.utils.cpp_extension) in this process when pip is absent.
    try:
        importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise SurveyError("no pip to download torch_npu wheels with (install pip, or pass wheel files)")


def fetch(spec: str, cache: Path | None = None, timeout: float = 1800) -> Path:
    """Download (never install) the newest torch_npu wheel matching ``spec`` into the cache, once; its path.

    An exact version already cached is used without asking the index; a line is re-resolved (pip skips a file it
    already has). When the download fails, the newest cached match is used with a warning, else SurveyError.
    """
    cache = cache or default_cache_dir()
    wanted = _release_key(spec)
    exact = wanted.post is not None or wanted.pre is not None or wanted.dev is not None
    cached = cached_wheel(spec, cache) if exact else None
    if cached is not None:
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    requirement = f"torch_npu=={spec}" if exact else f"torch_npu=={spec}.*"
    command = [*_pip(), "download", "--no-deps", "--only-binary=:all:", *WHEEL_PLATFORM, "-d", str(cache)]
    command += ["--disable-pip-version-check", "--quiet", requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        problem = "" if done.returncode == 0 else (done.stderr or done.stdout).strip()[-1500:]
    except (OSError, subprocess.TimeoutExpired) as err:
        problem = str(err)
    found = cached_wheel(spec, cache)
    if problem and found is not None:
        print(f"survey: pip download {requirement} failed; using cached {found.name}: {problem}", file=sys.stderr)
    if found is None:
        raise SurveyError(f"could not download {requirement} into {cache}: {problem or 'no matching wheel'}")
    return found


# -------------------------------------------------------------------------------------------------------- CLI
def _inputs(paths: Sequence[Path]) -> list[Path]:
    """Wheels and unpacked trees; a directory without torch_npu/ stands for the wheels in it."""
    found = []
    for path in paths:
        if path.is_dir() and not (path / "torch_npu").is_dir():
            wheels = sorted(path.glob("torch_npu-*.whl"))
            if not wheels:
                raise SurveyError(f"{path}: no torch_npu-*.whl and no torch_npu/ directory in it")
            found += wheels
        elif path.exists():
            found.append(path)
        else:
            raise SurveyError(f"{path}: no such file or directory")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat.tools.survey",
        description="Which of our fixes released torch_npu wheels carry, and whether the torch_npu names we hook "
        "exist with the signatures we rely on (read from the wheels' sources; torch_npu is never imported).",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="torch_npu wheels, unpacked trees, or dirs of wheels")
    parser.add_argument(
        "--fetch",
        action="append",
        default=[],
        metavar="SPEC",
        help="download the newest torch_npu of a line ('2.9.0') or an exact version ('2.9.0.post9')",
    )
    parser.add_argument("--all-lines", action="store_true", help=f"--fetch each of {', '.join(SURVEY_LINES)}")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help=f"wheel cache (default: ${WHEEL_CACHE_ENV} or ~/.cache/npu-inductor-compat/torch_npu_wheels)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown, or JSON) here")
    args = parser.parse_args(argv)
    specs = [*args.fetch, *(SURVEY_LINES if args.all_lines else ())]
    if not specs and not args.paths:
        parser.error("give wheels or directories, --fetch SPEC or --all-lines")
    try:
        paths = [fetch(spec, args.cache) for spec in specs] + _inputs(args.paths)
        reports = [survey(path) for path in dict.fromkeys(paths)]
    except SurveyError as err:
        print(f"survey: {err}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps([report.as_dict() for report in reports], indent=2)
        print(text)
    else:
        text = render(reports)
        print(render(reports, details=False))
    if args.out:
        args.out.write_text(text + "\n")
        print(f"\nwritten to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
