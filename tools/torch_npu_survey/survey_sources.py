"""One torch_npu release's files, from a wheel or an unpacked tree, read as text and ``ast`` (never imported), and
the ``ast`` walks the survey's checks share: statements a module runs, dotted names, where a name is bound."""

from __future__ import annotations

import ast
import email.parser
import os
import re
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from npu_inductor_compat.lines import LINES
from npu_inductor_compat.version import parse_release

# torch_npu files several survey checks read
INDEX_KERNEL_FILE = "torch_npu/_inductor/codegen/triton.py"
LOWERING_FILE = "torch_npu/_inductor/lowering.py"
SPLIT_TILING_FILE = "torch_npu/_inductor/codegen/split_tiling.py"
NPU_HEURISTICS_FILE = "torch_npu/_inductor/npu_triton_heuristics.py"
TILE_GENERATOR_FILE = "torch_npu/_inductor/codegen/tile_generator.py"


class SurveyError(Exception):
    """A wheel or directory could not be surveyed (not a torch_npu wheel, unreadable), or a download failed."""


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


def module_scope(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
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


def class_method(sources: Sources, path: str, cls: str, method: str) -> ast.FunctionDef | str | None:
    """torch_npu's ``<cls>.<method>`` in the file ``path``; a string saying what is absent when there is none (None:
    the class is there but defines no such method of its own)."""
    tree = sources.tree(path)
    if tree is None:
        return f"no {path}"
    for node in module_scope(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item
            return None
    return f"no {cls} in {path}"


def module_function(sources: Sources, path: str, name: str) -> ast.FunctionDef | None:
    """torch_npu's function ``name`` defined where the file ``path`` runs it at import (not nested); None when the
    file or the function is not there."""
    tree = sources.tree(path)
    body = [] if tree is None else module_scope(tree.body)
    return next((node for node in body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def index_kernel_method(sources: Sources, method: str) -> ast.FunctionDef | str | None:
    """torch_npu's ``NPUIndexTritonKernel.<method>`` (see class_method)."""
    return class_method(sources, INDEX_KERNEL_FILE, "NPUIndexTritonKernel", method)


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return ""


def binding(body: Sequence[ast.stmt], name: str) -> ast.stmt | None:
    """The first statement in this scope that binds ``name``."""
    for node in module_scope(body):
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
