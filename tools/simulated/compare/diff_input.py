"""The input side of ``diff``: reading one codegen output, and refusing anything that is not one (a path leading
out of it, a file that is not a regular file or is over MAX_FILE_BYTES, a summary of the wrong shape)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.output import MANIFEST, MANIFEST_TOOL, SUMMARY

MANIFEST_VERSIONS = (1,)  # the codegen_manifest.json versions this diff reads
MAX_FILE_BYTES = 64 * 1024 * 1024  # per file read; codegen's largest (a wrapper) is a few MiB
MAX_JSON_DEPTH = 64  # a summary nests 6 levels deep; deeper is not a summary (and would exhaust recursion)
EXPECTED = "the --out directory of `python -m npu_inductor_compat codegen`"


class NotACodegenOutput(Exception):
    """A directory that cannot be compared: missing, not written by codegen, damaged, or of an unknown version."""


def describe_size(size: int) -> str:
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


def read_inside(root: Path, relative: str, shown: Path) -> str:
    """The text of ``relative`` in the output ``root`` (resolved; ``shown`` as the user named it): symlinks followed,
    but the file must lie inside ``root``, be a regular file (a FIFO would block, a device never end) of at most
    MAX_FILE_BYTES, and be UTF-8. Raises NotACodegenOutput."""
    where = f"{shown}: not a codegen output: {relative!r}"
    if "\0" in relative:
        raise NotACodegenOutput(f"{where} holds a NUL character")
    try:
        path = (root / relative).resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop
        raise NotACodegenOutput(f"{where} cannot be resolved: {err}") from None
    if not path.is_relative_to(root):
        raise NotACodegenOutput(f"{where} leads outside the output (to {path}); diff reads nothing outside it")
    cap = MAX_FILE_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        raise NotACodegenOutput(f"{where} is unreadable: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotACodegenOutput(f"{where} is not a regular file (a FIFO, device, socket or directory)")
        if info.st_size > cap:
            raise NotACodegenOutput(
                f"{where} is {info.st_size} bytes, over diff's limit of {describe_size(cap)} per file"
            )
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(cap + 1)
    except OSError as err:
        raise NotACodegenOutput(f"{where} is unreadable: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if len(data) > cap:  # it grew while being read
        raise NotACodegenOutput(f"{where} is over diff's limit of {describe_size(cap)} per file")
    try:
        return data.decode()
    except UnicodeDecodeError as err:
        raise NotACodegenOutput(f"{where} is not UTF-8 text: {err}") from None


@dataclass
class CodegenOutput:
    root: Path  # as given
    summary: dict[str, Any]
    files: frozenset[str]  # what the manifest says codegen wrote
    real: Path  # root resolved: every file read must lie inside it

    def read(self, relative: str | None) -> str | None:
        """A file codegen wrote (None: no such file for this entry). A listed file that is gone is trouble."""
        if relative is None:
            return None
        if relative not in self.files:
            raise NotACodegenOutput(
                f"{self.root}: summary.json names {relative!r}, which {MANIFEST} does not list (a damaged output?)"
            )
        return read_inside(self.real, relative, self.root)

    @property
    def graphs(self) -> list[dict[str, Any]]:
        graphs: list[dict[str, Any]] = self.summary["graphs"]
        return graphs


def _read_json(root: Path, name: str, shown: Path, what: str) -> Any:
    text = read_inside(root, name, shown)
    try:
        document = json.loads(text)
    except RecursionError:
        document = None
    except json.JSONDecodeError as err:
        raise NotACodegenOutput(f"{shown / name}: unreadable {what}: {err}") from None
    if document is None or _depth(document) > MAX_JSON_DEPTH:
        raise NotACodegenOutput(f"{shown / name}: not a codegen output: nested deeper than {MAX_JSON_DEPTH} levels")
    return document


def _depth(document: Any) -> int:
    """How deep a JSON value nests, without recursion."""
    deepest, pending = 0, [(document, 1)]
    while pending:
        value, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_JSON_DEPTH:
            children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
            pending += [(child, depth + 1) for child in children]
    return deepest


def load(path: Path) -> CodegenOutput:
    """Read and check one codegen output directory. Raises NotACodegenOutput naming the path and what is expected."""
    if not path.exists():
        raise NotACodegenOutput(f"{path}: no such directory (expected {EXPECTED})")
    if not path.is_dir():
        raise NotACodegenOutput(f"{path}: not a directory (expected {EXPECTED})")
    missing = [name for name in (SUMMARY, MANIFEST) if not os.path.lexists(path / name)]
    if missing:
        hint = " (written by an older codegen? run it again)" if missing == [MANIFEST] else ""
        raise NotACodegenOutput(
            f"{path}: not a codegen output: no {' and no '.join(missing)}{hint}; expected {EXPECTED}"
        )
    root = path.resolve()
    manifest_path = path / MANIFEST
    manifest = _read_json(root, MANIFEST, path, "manifest")
    if not isinstance(manifest, dict) or manifest.get("tool") != MANIFEST_TOOL:
        tool = manifest.get("tool") if isinstance(manifest, dict) else None
        raise NotACodegenOutput(f"{manifest_path}: written by {tool!r}, expected tool {MANIFEST_TOOL!r}")
    version = manifest.get("version")
    if version not in MANIFEST_VERSIONS:
        readable = ", ".join(map(str, MANIFEST_VERSIONS))
        raise NotACodegenOutput(
            f"{manifest_path}: version {version!r} is not one this diff reads ({readable}): compare it with the "
            "npu-inductor-compat release that wrote it"
        )
    files = manifest.get("files")
    if not isinstance(files, list) or not all(isinstance(item, str) for item in files):
        raise NotACodegenOutput(f"{manifest_path}: 'files' must be a list of relative paths")
    summary = _read_json(root, SUMMARY, path, "summary")
    problem = summary_problem(summary)
    if problem is not None:
        raise NotACodegenOutput(f"{path / SUMMARY}: not a codegen output: {problem}")
    return CodegenOutput(path, summary, frozenset(files), root)


def _is_object_or_null(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _is_path_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


def summary_problem(summary: Any) -> str | None:
    """What makes ``summary`` not a summary.json diff can compare (None: nothing). Checks every part diff reads."""
    if not isinstance(summary, dict):
        return "expected a JSON object"
    graphs = summary.get("graphs")
    if not isinstance(graphs, list):
        return "expected a 'graphs' list"
    for key in ("fixes", "script_error"):
        if not _is_object_or_null(summary.get(key)):
            return f"{key!r} must be an object or null, not {type(summary[key]).__name__}"
    for position, graph in enumerate(graphs):
        problem = _graph_problem(graph)
        if problem is not None:
            return f"graphs[{position}]{problem}"
    return None


def _graph_problem(graph: Any) -> str | None:
    if not isinstance(graph, dict):
        return " is not an object"
    if type(graph.get("index")) is not int or not isinstance(graph.get("kind"), str):
        return " needs an integer 'index' and a 'kind'"
    if not _is_path_or_null(graph.get("compile_id")):
        return ": 'compile_id' must be a string such as '0/1', or null"
    kernels = graph.get("kernels", [])
    if not isinstance(kernels, list) or not all(isinstance(name, str) for name in kernels):
        return ": 'kernels' must be a list of names"
    if not _is_object_or_null(graph.get("error")):
        return ": 'error' must be an object or null"
    files = graph.get("files", {})
    if not _is_object_or_null(files):
        return ": 'files' must be an object"
    files = files or {}
    for key in ("wrapper", "wrapper_module"):
        if not _is_path_or_null(files.get(key)):
            return f": files.{key} must be a relative path or null"
    kernel_files = files.get("kernels")
    if not _is_object_or_null(kernel_files):
        return ": files.kernels must be an object of kernel name to its files"
    for name, entry in (kernel_files or {}).items():
        if not _is_object_or_null(entry):
            return f": files.kernels[{name!r}] must be an object"
        for key in ("source", "fragment"):
            if not _is_path_or_null((entry or {}).get(key)):
                return f": files.kernels[{name!r}].{key} must be a relative path or null"
    return None
