"""`python -m npu_inductor_compat diff DIR_A DIR_B`: what changed in the code Inductor generated for device "npu"
between two ``codegen`` outputs, typically one script on two torch lines (what a torch upgrade changes).

Reads only the files ``codegen`` wrote (``codegen_manifest.json``, ``summary.json``, the wrappers and kernels); it
imports no torch, so any environment with this package can compare outputs made in others.

**Graphs** are paired by Dynamo's compile id and kind, then by the kernels they hold (``diff_graphs.py``); only when
both runs split the script the same way (frames compiled, graphs per kind) are the rest paired by their order among
graphs of their kind. When the split changed (graph breaks moved), the report says so first. Unmatched graphs are
reported as only in A or only in B; a graph is labelled by its kind and place in its run.

**Kernels** of a matched graph are paired in this order, first rule wins:

1. the same name;
2. the same name up to its numeric suffix (``triton_poi_fused_add_0`` / ``triton_poi_fused_add_1``: another kernel
   was defined before it), in definition order;
3. the same normalised source once each kernel's own name is set aside (a pure rename);
4. the same kind (``triton_poi``, ``triton_per``, ``triton_red``, ``triton_tem``, ...) and the same numeric suffix:
   Inductor numbers a graph's kernels in definition order and names each after the ops it fuses, so when torch
   fuses or names ops differently (2.7.1's ``triton_poi_fused_cos_mul_0`` is 2.12.1's
   ``triton_poi_fused_cos_expand_mul_threshold_backward_unsqueeze_0``) the position is what identifies it;
5. the same fused ops and numeric suffix with a different kind (a persistent reduction that became a looped one,
   ``triton_per_*_0`` / ``triton_red_*_0``).

Matching by content alone (a similarity score) was rejected: a changed kernel is exactly the case where contents
differ, and scores make pairings that nobody can predict; these rules are what Inductor's naming guarantees. Whatever
is left is reported as removed (only in A) or added (only in B). A paired kernel under another name is reported
once as a rename; in its source and in the wrappers B's name is then replaced by A's, so a rename alone does not
turn every line that mentions the kernel into a change.

A changed Triton kernel is shown in two parts: its **launch metadata**, the arguments of the
``@triton_heuristics.<heuristic>(...)`` decorator (``triton_meta``: signature, constants, device properties,
configs; ``inductor_meta``; ``size_hints``, ...), read with ``ast`` and compared key by key; and its **body**, the
rest of the module (imports, the ``@triton.jit`` function), as a short unified diff. Sources that do not parse are
compared as text. A wrapper is compared as text with each kernel definition (and the comment block Inductor writes
above it) collapsed to one line, since kernels are compared on their own; a C++ wrapper's Python module with its
C++ literal collapsed (``wrapper.cpp`` holds it).

**Noise** that differs between two runs of the same script on the same torch line, found by diffing such runs, is
normalised away before comparing: the ``# kernel path:`` comments and every path into Inductor's cache (a fresh
temporary directory per run, e.g. the ``.cubin`` a C++ wrapper loads), the ``# AOT ID:`` counter, site-packages
prefixes, and the order of ``&``-joined masks (torch 2.7.1 joins ``xmask & r0_mask`` from a set, so either order
comes out). Ignored in launch metadata: ``filename`` (always ``__file__``) and ``inductor_meta.backend_hash`` (a
hash of torch's and Triton's sources: it differs whenever torch does, and says nothing about the kernel). The
generated code holds no timestamps.

Exit codes, like diff(1): 0 no differences in the generated code, 1 differences, 2 trouble (a missing directory,
one that is not a codegen output, an unreadable or unknown summary/manifest version).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import ABSENT  # a key present on one side only: shown as (absent)
from npu_inductor_compat.tools.simulated import diff_graphs
from npu_inductor_compat.tools.simulated.capture import is_async_compile, kernel_definition
from npu_inductor_compat.tools.simulated.diff_graphs import KernelName
from npu_inductor_compat.tools.simulated.diff_input import (  # noqa: F401 (MANIFEST_VERSIONS, load: this module's API)
    MANIFEST_VERSIONS,
    CodegenOutput,
    NotACodegenOutput,
    load,
)

SAME, DIFFERENT, TROUBLE = 0, 1, 2
REPORT_VERSION = 1  # of the --json output

BODY_CAP = 40  # unified-diff lines shown per kernel body (--full: all)
WRAPPER_CAP = 120  # per wrapper, with --verbose
META_CAP = 40  # launch-metadata changes shown per kernel
VALUE_CAP = 160  # characters of one metadata value
COMMON_MIN = 3  # launch-metadata changes every changed kernel shares are listed once from this many on

IGNORED_LAUNCH_KEYS = ("filename", "inductor_meta.backend_hash")
# options that change the generated code: a difference means the two outputs are not a torch-only comparison
OPTION_KEYS = ("argv", "backend", "soc", "provider", "cpp_wrapper", "dynamic_flag", "without_fix", "kernel_metadata")
OLD_PROVIDER_NAMES = {"simulated-npu": "stock"}  # codegen's --provider names before torch_npu's became the default
# Counted as differences. A graph's compile id is shown in its heading, and Dynamo's recompile reasons are not
# compared: their wording changes between torch releases while the generated code may not.
GRAPH_FIELDS = ("status", "device", "dynamic", "wrapper")


# ---------------------------------------------------------------------------------------------------------------
# Noise
#
# Every rewrite below takes time linear in the text, whatever it holds: a regex that can start anywhere in a long
# token and scan to its end before failing takes minutes on one 400 KB line. The patterns only ever find maximal
# runs (tokens, path segments, mask chains); what to replace inside a run is decided in Python.

_LINE_NOISE = (  # anchored at a line start: linear as they are
    (re.compile(r"^([ \t]*# kernel path:).*$", re.M), r"\1 <inductor cache>"),
    (re.compile(r"^([ \t]*# AOT ID:).*$", re.M), r"\1 <id>"),
)
_TOKEN = re.compile(r"[^\s'\"]+")  # a run without whitespace or quotes: a path is always inside one
_PATH_RUN = re.compile(r"(?:/[^\s'\"/]+)+")  # /segment/segment...
_HASHED = re.compile(r"/c[a-z0-9]{50}")  # a path segment named by a content hash (at least 50 characters)
_HASH_REST = re.compile(r"[a-z0-9]*(\.\w+)?")
_WORDS = re.compile(r"\w+")
_MASK_CHAIN = re.compile(r"(?<!\w)\w*mask(?!\w)(?:\s*&\s*\w*mask(?!\w))+")
_MASK_GAP = re.compile(r"\s*&\s*")
_CHAIN_END = re.compile(r"\s*(?:[)\],]|$)", re.M)  # what may follow a chain: a closing bracket, a comma, a line end
_MASK_OPENERS = "([,=&"  # what may come before a chain: an opening bracket, a comma, `=`, `&`
CACHE, SITE = "/torchinductor_", "/site-packages/"


def _cache_path(found: re.Match[str]) -> str:
    """A token holding a path into Inductor's cache, keeping the last extension after the cache directory."""
    token = found[0]
    start = token.rfind(CACHE)
    if start < 0:
        return token
    rest = token[start + len(CACHE) :]
    dot = rest.rfind(".")
    extension = rest[dot:] if dot >= 0 and _WORDS.fullmatch(rest, dot + 1) else ""
    return "<inductor cache>" + extension


def _hashed_path(found: re.Match[str]) -> str:
    """A run of path segments up to its last content-hash-named segment after the first (and its extension)."""
    run = found[0]
    last = None
    for hashed in _HASHED.finditer(run, 1):
        last = hashed
    if last is None:
        return run
    rest = _HASH_REST.match(run, last.end())
    assert rest is not None  # it matches the empty string
    return f"<inductor cache>{rest[1] or ''}{run[rest.end() :]}"


def _site_packages(found: re.Match[str]) -> str:
    token = found[0]
    start = token.rfind(SITE)
    return token if start < 0 else "<site-packages>/" + token[start + len(SITE) :]


def _sorted_masks(text: str) -> str:
    """Sort each chain of ``&``-joined masks that stands alone in a call, subscript or assignment: a chain of two
    or more mask names, after an opening bracket, a comma, ``=`` or ``&`` and before a closing bracket, a comma
    or a line end (where the chain is cut by a line end, up to there)."""
    out, done = [], 0
    for chain in _MASK_CHAIN.finditer(text):
        words = list(_WORDS.finditer(chain[0]))  # each mask name, with its place in the chain
        gaps = list(_MASK_GAP.finditer(chain[0]))
        if _CHAIN_END.match(text, chain.end()):
            last = len(words) - 1
        else:  # the last mask before `&` on the next line still ends a chain
            cut = [i for i, gap in enumerate(gaps) if "\n" in gap[0].split("&")[0]]
            if not cut:
                continue
            last = cut[-1]
        before = chain.start()
        while before > 0 and text[before - 1].isspace():
            before -= 1
        first = 0 if before > 0 and text[before - 1] in _MASK_OPENERS else 1
        if last - first < 1:
            continue
        start, end = chain.start() + words[first].start(), chain.start() + words[last].end()
        names = sorted(text[start:end].replace(" ", "").split("&"))  # a tab or a line end stays with its name
        out += [text[done:start], " & ".join(names)]
        done = end
    out.append(text[done:])
    return "".join(out)


def normalise(text: str) -> str:
    """Remove what differs between two runs of the same script on the same torch (see the module docstring).
    Line-preserving: every substitution stays within its line."""
    for pattern, replacement in _LINE_NOISE:
        text = pattern.sub(replacement, text)
    text = _TOKEN.sub(_cache_path, text)
    text = _PATH_RUN.sub(_hashed_path, text)
    text = _TOKEN.sub(_site_packages, text)
    return _sorted_masks(text)


def _renamer(renames: dict[str, str]) -> Callable[[str], str]:
    """Replace kernel names (B's by A's) in one pass; a name also matches as a suffix (C++'s ``call_<name>``)."""
    if not renames:
        return lambda text: text
    pattern = re.compile(
        "(" + "|".join(re.escape(name) for name in sorted(renames, key=len, reverse=True)) + r")(?![A-Za-z0-9_])"
    )
    return lambda text: pattern.sub(lambda found: renames[found[1]], text)


# ---------------------------------------------------------------------------------------------------------------
# Kernel sources: launch metadata (the heuristics decorator's arguments) and the body


@dataclass(frozen=True)
class Unevaluated:
    """An expression in the metadata that is not a literal (``ReductionHint.INNER``): compared by its text."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Construct:
    """A constructor call in the metadata (``DeviceProperties(type='npu', ...)``): compared argument by argument."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def __repr__(self) -> str:
        parts = [repr(arg) for arg in self.args] + [f"{key}={value!r}" for key, value in self.kwargs]
        return f"{self.name}({', '.join(parts)})"


def _value(node: ast.expr) -> Any:
    """A metadata expression as a Python value: literals, containers, ``set()``, constructor calls; anything else
    as its text (never evaluated)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _value(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Dict):
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**spread}
                return Unevaluated(ast.unparse(node))
            key = _value(key_node)
            result[key if _hashable(key) else repr(key)] = _value(value_node)
        return result
    if isinstance(node, ast.List):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(item) for item in node.elts)
    if isinstance(node, ast.Set):
        items = [_value(item) for item in node.elts]
        return frozenset(items) if all(map(_hashable, items)) else Unevaluated(ast.unparse(node))
    if isinstance(node, ast.Call) and not any(keyword.arg is None for keyword in node.keywords):
        name = ast.unparse(node.func)
        if name in ("set", "frozenset") and not node.args and not node.keywords:
            return frozenset()
        if isinstance(node.func, ast.Name | ast.Attribute):
            args = tuple(_value(arg) for arg in node.args)
            kwargs = tuple((str(keyword.arg), _value(keyword.value)) for keyword in node.keywords)
            return Construct(name, args, kwargs)
    return Unevaluated(ast.unparse(node))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@dataclass
class KernelSource:
    text: str  # normalised
    heuristic: str | None = None  # e.g. "triton_heuristics.pointwise"
    launch: dict[str, Any] | None = None  # None: not parsed (see note)
    body: str = ""  # the text with the decorator's arguments elided
    note: str | None = None


def _launch_decorator(function: ast.FunctionDef) -> ast.Call | None:
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            keyword.arg in ("triton_meta", "inductor_meta") for keyword in decorator.keywords
        ):
            return decorator
    return None


# What reading Python text with ast can raise besides SyntaxError: ValueError for a NUL (Python 3.11),
# RecursionError or MemoryError for deep nesting (in ast.parse, ast.unparse or _value).
UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def read_kernel(text: str) -> KernelSource:
    """Split a Triton kernel module into its launch metadata and its body; other text is all body."""
    text = normalise(text)
    try:
        return _split_kernel(text)
    except UNPARSABLE as err:
        why = f"{err.msg}, line {err.lineno}" if isinstance(err, SyntaxError) else type(err).__name__
        return KernelSource(text, body=text, note=f"not parsed ({why}): compared as text")


def _split_kernel(text: str) -> KernelSource:
    tree = ast.parse(text)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for function in functions:
        call = _launch_decorator(function)
        if call is None or call.end_lineno is None:
            continue
        launch: dict[str, Any] = {f"args[{i}]": _value(arg) for i, arg in enumerate(call.args)}
        launch.update({str(keyword.arg): _value(keyword.value) for keyword in call.keywords})
        lines = text.splitlines()
        heuristic = ast.unparse(call.func)
        first, last = call.lineno - 1, call.end_lineno
        lines[first:last] = [lines[first][: _column(lines[first], call.col_offset)] + f"{heuristic}(...)"]
        return KernelSource(text, heuristic, launch, "\n".join(lines) + "\n")
    if any(_is_jit(function) for function in functions):
        return KernelSource(text, body=text, note="no launch decorator with triton_meta/inductor_meta found")
    return KernelSource(text, body=text)


def _is_jit(function: ast.FunctionDef) -> bool:
    return any(ast.unparse(decorator).endswith("jit") for decorator in function.decorator_list)


def _column(line: str, utf8_offset: int) -> int:
    """ast's column offsets count UTF-8 bytes."""
    return len(line.encode()[:utf8_offset].decode(errors="ignore"))


# ---------------------------------------------------------------------------------------------------------------
# Comparing


@dataclass
class Difference:
    """One value that differs: a summary field, an option, a fix status or a launch-metadata key."""

    key: str
    a: Any
    b: Any
    summary: str | None = None  # shown instead of the two values

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"key": self.key}
        for side in ("a", "b"):
            value = getattr(self, side)
            if value is not ABSENT:
                result[side] = _jsonable(value)
        return result

    def show(self, cap: int | None) -> str:
        if self.summary is not None:
            return f"{self.key}: {self.summary}"
        return f"{self.key}: {_shown(self.a, cap)} -> {_shown(self.b, cap)}"


def _moves(a: list[str], b: list[str]) -> str:
    """How argument list b differs from a, by position: ``+ks0 before xnumel; -XBLOCK``."""
    moves = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        where = f"before {a[i1]}" if i1 < len(a) else "at the end"
        if tag == "insert":
            moves.append(f"+{', '.join(b[j1:j2])} {where}")
        elif tag == "delete":
            moves.append(f"-{', '.join(a[i1:i2])}")
        elif tag == "replace":
            moves.append(f"{', '.join(a[i1:i2])} -> {', '.join(b[j1:j2])}")
    return "; ".join(moves)


def _shown(value: Any, cap: int | None) -> str:
    text = "(absent)" if value is ABSENT else repr(value)
    return text if cap is None or len(text) <= cap else text[: cap - 3] + "..."


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key if isinstance(key, str) else repr(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, frozenset | set):
        return sorted((_jsonable(item) for item in value), key=repr)
    if isinstance(value, Construct | Unevaluated):
        return repr(value)
    return value


def compare_values(a: Any, b: Any, key: str = "") -> list[Difference]:
    """Key-by-key differences of two metadata values (dicts and constructor calls recursively, lists of the same
    length item by item). A signature whose argument list differs also gets one change first saying where
    arguments were added, removed or replaced: the launch passes them by position."""
    if isinstance(a, Construct) and isinstance(b, Construct) and a.name == b.name:
        moved = compare_values(list(a.args), list(b.args), key) if a.args != b.args else []
        return moved + compare_values(dict(a.kwargs), dict(b.kwargs), key)
    if isinstance(a, dict) and isinstance(b, dict):
        changes: list[Difference] = []
        for name in [*a, *(name for name in b if name not in a)]:
            if isinstance(name, str):
                child = f"{key}.{name}" if key else name
            else:
                child = f"{key}[{name!r}]"
            changes += compare_values(a.get(name, ABSENT), b.get(name, ABSENT), child)
        if key.endswith("signature") and list(a) != list(b):
            changes.insert(0, Difference(f"{key} (arguments)", list(a), list(b), _moves(list(a), list(b))))
        return changes
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b) and type(a) is type(b):
        return [
            change for i, (x, y) in enumerate(zip(a, b, strict=True)) for change in compare_values(x, y, f"{key}[{i}]")
        ]
    return [] if _same(a, b) else [Difference(key, a, b)]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # 1 == True == 1.0 in Python, not in a kernel's metadata


@dataclass
class TextDiff:
    added: int
    removed: int
    lines: list[str]  # unified diff, capped
    omitted: int  # diff lines cut by the cap

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed, "diff": self.lines, "omitted_lines": self.omitted}

    def counts(self) -> str:
        return f"+{self.added} -{self.removed}"


def text_diff(a: str, b: str, name: str, context: int, cap: int | None) -> TextDiff:
    a_lines, b_lines = a.splitlines(), b.splitlines()
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    if not (added or removed):
        return TextDiff(0, 0, [], 0)
    lines = list(difflib.unified_diff(a_lines, b_lines, f"A/{name}", f"B/{name}", n=context, lineterm=""))[2:]
    omitted = 0 if cap is None else max(0, len(lines) - cap)
    return TextDiff(added, removed, lines[:cap] if cap is not None else lines, omitted)


@dataclass
class KernelDiff:
    a: str | None
    b: str | None
    status: str  # "same", "renamed" (otherwise the same), "changed", "added", "removed"
    matched_by: str | None = None  # "name", "numbering", "content", "position"
    defined_with: Difference | None = None
    heuristic: Difference | None = None
    launch: list[Difference] = field(default_factory=list)
    launch_omitted: int = 0
    body: TextDiff | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "status": self.status,
            "matched_by": self.matched_by,
            "defined_with": None if self.defined_with is None else self.defined_with.to_json(),
            "heuristic": None if self.heuristic is None else self.heuristic.to_json(),
            "launch": [change.to_json() for change in self.launch],
            "launch_omitted": self.launch_omitted,
            "body": None if self.body is None else self.body.to_json(),
            "note": self.note,
        }


@dataclass
class WrapperDiff:
    file: str  # "wrapper.py", "wrapper.cpp", "wrapper_module.py"
    diff: TextDiff | None  # None: on one side only
    only_in: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "only_in": self.only_in, **({} if self.diff is None else self.diff.to_json())}


@dataclass
class GraphDiff:
    label: str
    kind: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    changes: list[Difference] = field(default_factory=list)
    kernels: list[KernelDiff] = field(default_factory=list)
    wrappers: list[WrapperDiff] = field(default_factory=list)

    @property
    def only_in(self) -> str | None:
        return "A" if self.b is None else "B" if self.a is None else None

    @property
    def different(self) -> bool:
        return bool(
            self.only_in
            or self.changes
            or any(kernel.status != "same" for kernel in self.kernels)
            or any(wrapper.diff is None or wrapper.diff.changed for wrapper in self.wrappers)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "a": None if self.a is None else self.a["index"],
            "b": None if self.b is None else self.b["index"],
            "only_in": self.only_in,
            "different": self.different,
            "changes": [change.to_json() for change in self.changes],
            "kernels": [kernel.to_json() for kernel in self.kernels],
            "wrappers": [wrapper.to_json() for wrapper in self.wrappers],
        }


@dataclass
class Settings:
    context: int = 3
    full: bool = False

    def cap(self, limit: int) -> int | None:
        return None if self.full else limit


def graph_keys(graphs: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each graph's identity across runs: its kind and its position among graphs of that kind; a backward graph's,
    the identity of its forward graph and its position among that forward's backward graphs."""
    keys: dict[tuple[Any, ...], dict[str, Any]] = {}
    own: dict[int, tuple[Any, ...]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for graph in sorted(graphs, key=lambda graph: graph["index"]):
        if graph["kind"] == "backward":
            forward = graph.get("forward")
            group: tuple[Any, ...] = ("backward", own.get(forward) if isinstance(forward, int) else None)
        else:
            group = (graph["kind"],)
        position = counts.get(group, 0)
        counts[group] = position + 1
        key = (*group, position)
        keys[key] = graph
        own[graph["index"]] = key
    return keys


def _label(key: tuple[Any, ...]) -> str:
    if key[0] == "backward" and key[1] is not None:
        return f"backward{f' #{key[2]}' if key[2] else ''} of {_label(key[1])}"  # one backward per forward, usually
    return f"{key[0]} #{key[-1]}"


def _by_position(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]
) -> list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """(label, graph in A, graph in B): the same kind and place among that kind (graph_keys)."""
    keys_a, keys_b = graph_keys(a), graph_keys(b)
    pairs: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]
    pairs = [(_label(key), graph, keys_b.get(key)) for key, graph in keys_a.items()]
    pairs += [(_label(key), None, graph) for key, graph in keys_b.items() if key not in keys_a]
    return pairs


def match_graphs(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]
) -> list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """(label, graph in A, graph in B) in A's order, then B's graphs that have no match (diff_graphs: by compile id,
    then by kernels, then by position where the split is unchanged); each graph labelled by its place in its run."""
    labels = {("A", graph["index"]): _label(key) for key, graph in graph_keys(a).items()}
    labels |= {("B", graph["index"]): _label(key) for key, graph in graph_keys(b).items()}
    return diff_graphs.match_graphs(a, b, _by_position, lambda side, graph: labels[(side, graph["index"])])


def match_kernels(
    names_a: Sequence[str], names_b: Sequence[str], own_text: Callable[[str, str], str]
) -> list[tuple[str, str, str]]:
    """(A's name, B's name, rule) for the kernels paired by the module docstring's rules, in A's order.
    ``own_text(side, name)`` is a kernel's normalised source with its own name set aside."""
    left_a, left_b = list(names_a), list(names_b)
    pairs: list[tuple[str, str, str]] = []

    def pair(rule: str, same: Callable[[str, str], bool]) -> None:
        for name_a in list(left_a):
            for name_b in left_b:
                if same(name_a, name_b):
                    pairs.append((name_a, name_b, rule))
                    left_a.remove(name_a)
                    left_b.remove(name_b)
                    break

    def same_number_and(part: str) -> Callable[[str, str], bool]:
        def same(x: str, y: str) -> bool:
            a, b = KernelName.parse(x), KernelName.parse(y)
            return a.number is not None and a.number == b.number and getattr(a, part) == getattr(b, part)

        return same

    pair("name", lambda x, y: x == y)
    pair("numbering", lambda x, y: KernelName.parse(x).stem == KernelName.parse(y).stem)
    pair("content", lambda x, y: own_text("a", x) == own_text("b", y))
    pair("position", same_number_and("kind"))
    pair("position", same_number_and("ops"))
    order = {name: i for i, name in enumerate(names_a)}
    return sorted(pairs, key=lambda item: order[item[0]])


class _GraphSide:
    """One graph's kernels and wrappers as read from its output."""

    def __init__(self, output: CodegenOutput, graph: dict[str, Any]) -> None:
        self.output, self.graph = output, graph
        self.files: dict[str, Any] = graph.get("files") or {}
        self.kernel_files: dict[str, Any] = self.files.get("kernels") or {}
        self._kernels: dict[str, KernelSource] = {}
        self._own: dict[str, str] = {}

    @property
    def names(self) -> list[str]:
        names: list[str] = self.graph.get("kernels", [])
        return names

    def defined_with(self, name: str) -> str | None:
        method = (self.kernel_files.get(name) or {}).get("defined_with")
        return method if isinstance(method, str) else None

    def kernel(self, name: str) -> KernelSource:
        if name not in self._kernels:
            entry = self.kernel_files.get(name) or {}
            source = self.output.read(entry.get("source"))
            if source is None:
                fragment = self.output.read(entry.get("fragment"))
                source = _fragment_source(fragment) if fragment is not None else None
                source = source if source is not None else fragment
            if source is None:
                kernel = KernelSource("", body="", note="no source or fragment file in this output")
            else:
                kernel = read_kernel(source)
            self._kernels[name] = kernel
        return self._kernels[name]

    def own_text(self, name: str) -> str:
        if name not in self._own:
            self._own[name] = _renamer({name: "<kernel>"})(self.kernel(name).text)
        return self._own[name]


def _strip_launch(launch: dict[str, Any]) -> dict[str, Any]:
    """The launch metadata without the keys that are noise (IGNORED_LAUNCH_KEYS)."""
    result = dict(launch)
    for key in IGNORED_LAUNCH_KEYS:
        head, _, tail = key.partition(".")
        if not tail:
            result.pop(head, None)
        elif isinstance(result.get(head), dict):
            result[head] = {name: value for name, value in result[head].items() if name != tail}
    return result


def compare_kernel(
    side_a: _GraphSide, side_b: _GraphSide, name_a: str, name_b: str, rule: str, settings: Settings
) -> KernelDiff:
    kernel_a = side_a.kernel(name_a)
    rename = _renamer({name_b: name_a} if name_b != name_a else {})
    kernel_b = read_kernel(rename(side_b.kernel(name_b).text))  # B under A's name: a rename alone changes nothing
    result = KernelDiff(name_a, name_b, "same", rule)
    method_a, method_b = side_a.defined_with(name_a), side_b.defined_with(name_b)
    if method_a != method_b:
        result.defined_with = Difference("defined_with", method_a, method_b)
    if kernel_a.heuristic != kernel_b.heuristic:
        result.heuristic = Difference("heuristic", kernel_a.heuristic, kernel_b.heuristic)
    if kernel_a.launch is not None and kernel_b.launch is not None:
        launch = compare_values(_strip_launch(kernel_a.launch), _strip_launch(kernel_b.launch))
        cap = settings.cap(META_CAP)
        result.launch = launch if cap is None else launch[:cap]
        result.launch_omitted = len(launch) - len(result.launch)
        body_a, body_b = kernel_a.body, kernel_b.body
    else:
        body_a, body_b = kernel_a.text, kernel_b.text  # launch metadata, if any, stays in the text
    result.note = (
        "; ".join(f"{side}: {kernel.note}" for side, kernel in (("A", kernel_a), ("B", kernel_b)) if kernel.note)
        or None
    )
    body = text_diff(body_a, body_b, f"kernels/{name_a}.py", settings.context, settings.cap(BODY_CAP))
    result.body = body if body.changed else None
    if result.defined_with or result.heuristic or result.launch or result.body:
        result.status = "changed"
    elif name_a != name_b:
        result.status = "renamed"
    return result


def _fragment_source(fragment: str) -> str | None:
    try:
        return kernel_definition(fragment).source
    except UNPARSABLE:
        return None


def collapse_wrapper(text: str, cpp: str | None = None) -> str:
    """A Python wrapper with each kernel definition (and Inductor's comment block above it) on one line, and the
    C++ literal of a C++ wrapper's module replaced by a pointer to wrapper.cpp. Unparsable text is returned as is."""
    try:
        return _collapse(text, cpp)
    except UNPARSABLE:
        return text


def _collapse(text: str, cpp: str | None) -> str:
    tree = ast.parse(text)
    lines = text.splitlines()
    spans: list[tuple[int, int, str]] = []  # (first line, end line, replacement), 0-based, end exclusive
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.end_lineno is not None:
            value = node.value
            if isinstance(value, ast.Call) and is_async_compile(value.func):
                first = node.lineno - 1
                while first > 0 and lines[first - 1].lstrip().startswith("#"):
                    first -= 1
                targets = " = ".join(ast.unparse(target) for target in node.targets)
                method = value.func.attr if isinstance(value.func, ast.Attribute) else "?"
                spans.append(
                    (first, node.end_lineno, f"{targets} = async_compile.{method}(...)  # compared on its own")
                )
    for literal in ast.walk(tree):
        if (
            isinstance(literal, ast.Constant)
            and isinstance(literal.value, str)
            and literal.end_lineno is not None
            and literal.end_col_offset is not None
            and literal.end_lineno > literal.lineno
            and ((cpp is not None and cpp.strip() and cpp.strip() in literal.value) or "#include" in literal.value)
        ):
            first, last = literal.lineno - 1, literal.end_lineno - 1
            head = lines[first][: _column(lines[first], literal.col_offset)]
            tail = lines[last][_column(lines[last], literal.end_col_offset) :]
            spans.append((first, last + 1, f"{head}'''<the C++: wrapper.cpp>'''{tail}"))
    kept: list[tuple[int, int, str]] = []
    for span in sorted(spans):  # a span inside another (a literal inside a kernel definition) goes
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    for first, end, replacement in reversed(kept):
        lines[first:end] = [replacement]
    return "\n".join(lines) + "\n"


def compare_graph(
    label: str,
    output_a: CodegenOutput,
    graph_a: dict[str, Any] | None,
    output_b: CodegenOutput,
    graph_b: dict[str, Any] | None,
    settings: Settings,
) -> GraphDiff:
    kind = (graph_a or graph_b or {}).get("kind", "?")
    result = GraphDiff(label, kind, graph_a, graph_b)
    if graph_a is None or graph_b is None:
        return result
    for key in GRAPH_FIELDS:
        if key in graph_a or key in graph_b:
            value_a, value_b = graph_a.get(key, ABSENT), graph_b.get(key, ABSENT)
            if value_a != value_b:
                result.changes.append(Difference(key, value_a, value_b))
    error_a, error_b = _error_text(graph_a), _error_text(graph_b)
    if error_a != error_b:
        result.changes.append(Difference("error", error_a, error_b))
    side_a, side_b = _GraphSide(output_a, graph_a), _GraphSide(output_b, graph_b)
    pairs = match_kernels(
        side_a.names, side_b.names, lambda side, name: (side_a if side == "a" else side_b).own_text(name)
    )
    paired_a = {name_a for name_a, _, _ in pairs}
    paired_b = {name_b for _, name_b, _ in pairs}
    for name_a, name_b, rule in pairs:
        result.kernels.append(compare_kernel(side_a, side_b, name_a, name_b, rule, settings))
    result.kernels += [KernelDiff(name, None, "removed") for name in side_a.names if name not in paired_a]
    result.kernels += [KernelDiff(None, name, "added") for name in side_b.names if name not in paired_b]
    rename = _renamer({name_b: name_a for name_a, name_b, _ in pairs if name_a != name_b})
    result.wrappers = _compare_wrappers(side_a, side_b, rename, settings)
    return result


def _error_text(entry: dict[str, Any], key: str = "error") -> str | None:
    error = entry.get(key)
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "").splitlines()
    return f"{error.get('type')}: {message[0] if message else ''}"


def _compare_wrappers(
    side_a: _GraphSide, side_b: _GraphSide, rename: Callable[[str], str], settings: Settings
) -> list[WrapperDiff]:
    results = []
    texts: list[dict[str, str]] = []
    for side in (side_a, side_b):
        found: dict[str, str] = {}
        wrapper = side.output.read(side.files.get("wrapper"))
        cpp = None
        if wrapper is not None:
            name = Path(str(side.files["wrapper"])).name
            found[name] = normalise(wrapper)
            cpp = found[name] if name.endswith(".cpp") else None
            if not name.endswith(".cpp"):
                found[name] = collapse_wrapper(found[name])
        module = side.output.read(side.files.get("wrapper_module"))
        if module is not None:
            found[Path(str(side.files["wrapper_module"])).name] = collapse_wrapper(normalise(module), cpp)
        texts.append(found)
    text_a, text_b = texts
    for name in [*text_a, *(name for name in text_b if name not in text_a)]:
        if name not in text_b or name not in text_a:
            results.append(WrapperDiff(name, None, "A" if name in text_a else "B"))
            continue
        diff = text_diff(text_a[name], rename(text_b[name]), name, settings.context, settings.cap(WRAPPER_CAP))
        results.append(WrapperDiff(name, diff))
    return results


@dataclass
class Report:
    a: CodegenOutput
    b: CodegenOutput
    warnings: list[str]
    fixes: list[Difference]
    script_error: Difference | None
    graphs: list[GraphDiff]
    split: str | None = None  # how the graph split changed, when it did

    @property
    def different(self) -> bool:
        return self.script_error is not None or self.split is not None or any(graph.different for graph in self.graphs)

    def counts(self) -> dict[str, int]:
        kernels = [kernel for graph in self.graphs for kernel in graph.kernels]
        return {
            "graphs_compared": sum(1 for graph in self.graphs if graph.only_in is None),
            "graphs_different": sum(1 for graph in self.graphs if graph.only_in is None and graph.different),
            "graphs_only_in_a": sum(1 for graph in self.graphs if graph.only_in == "A"),
            "graphs_only_in_b": sum(1 for graph in self.graphs if graph.only_in == "B"),
            **{f"kernels_{status}": sum(1 for kernel in kernels if kernel.status == status) for status in _STATUSES},
            "wrappers_changed": sum(
                1 for graph in self.graphs for wrapper in graph.wrappers if wrapper.diff is None or wrapper.diff.changed
            ),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": "npu-inductor-compat diff",
            "version": REPORT_VERSION,
            "different": self.different,
            "a": _side(self.a),
            "b": _side(self.b),
            "warnings": self.warnings,
            "split": self.split,
            "fixes": [change.to_json() for change in self.fixes],
            "script_error": None if self.script_error is None else self.script_error.to_json(),
            "counts": self.counts(),
            "graphs": [graph.to_json() for graph in self.graphs],
        }


_STATUSES = ("changed", "renamed", "added", "removed", "same")


def _side(output: CodegenOutput) -> dict[str, Any]:
    summary = output.summary
    return {
        "path": str(output.root),
        "torch": summary.get("torch"),
        "line": summary.get("line"),
        "backend": summary.get("backend"),
        "soc": summary.get("soc"),
        "provider": _options(summary).get("provider"),
        "script": summary.get("script"),
        "options": _options(summary),
    }


def _options(summary: dict[str, Any]) -> dict[str, Any]:
    options = {key: summary[key] for key in OPTION_KEYS if key in summary}
    if "provider" in options:
        options["provider"] = OLD_PROVIDER_NAMES.get(options["provider"], options["provider"])
    if "dynamic_flag" not in summary and "dynamic" in summary:  # outputs that have only the overall flag
        options["dynamic"] = summary["dynamic"]
    return options


def _warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    warnings = []
    script_a, script_b = str(a.get("script")), str(b.get("script"))
    if Path(script_a).name != Path(script_b).name:  # the same name from another directory: the same script
        warnings.append(f"A and B ran different scripts ({script_a} / {script_b}): not a comparison of one model")
    options_a, options_b = _options(a), _options(b)
    differing = [
        f"{key} {options_a.get(key, '(absent)')!r} / {options_b.get(key, '(absent)')!r}"
        for key in [*options_a, *(key for key in options_b if key not in options_a)]
        if options_a.get(key, ABSENT) != options_b.get(key, ABSENT)
    ]
    if differing:
        warnings.append(
            "A and B ran with different options (" + "; ".join(differing) + "): differences below come from them too"
        )
    return warnings


def compare(a: CodegenOutput, b: CodegenOutput, settings: Settings | None = None) -> Report:
    """Everything that differs between two codegen outputs. Raises NotACodegenOutput for a damaged output."""
    settings = settings or Settings()
    fixes_a, fixes_b = a.summary.get("fixes") or {}, b.summary.get("fixes") or {}
    fixes = [
        Difference(fix, fixes_a.get(fix, ABSENT), fixes_b.get(fix, ABSENT))
        for fix in [*fixes_a, *(fix for fix in fixes_b if fix not in fixes_a)]
        if fixes_a.get(fix, ABSENT) != fixes_b.get(fix, ABSENT)
    ]
    error_a, error_b = _error_text(a.summary, "script_error"), _error_text(b.summary, "script_error")
    script_error = None if error_a == error_b else Difference("script_error", error_a, error_b)
    graphs = [
        compare_graph(label, a, graph_a, b, graph_b, settings)
        for label, graph_a, graph_b in match_graphs(a.graphs, b.graphs)
    ]
    split = diff_graphs.split_change(a.graphs, b.graphs)
    return Report(a, b, _warnings(a.summary, b.summary), fixes, script_error, graphs, split)


# ---------------------------------------------------------------------------------------------------------------
# Text report


def _describe(graph: dict[str, Any]) -> str:
    parts = [f"graph {graph['index']}"]
    if graph.get("compile_id"):
        parts.append(f"compile {graph['compile_id']}")
    parts.append(f"on {graph.get('device', '?')}")
    if graph.get("wrapper"):
        parts.append(f"{graph['wrapper']} wrapper")
    return ", ".join(parts)


def _indent(lines: Iterable[str], prefix: str) -> list[str]:
    return [prefix + line for line in lines]


def render(report: Report, verbose: bool = False, full: bool = False) -> str:
    """The comparison for a reader: header, then each graph (identical ones in one line), then the counts."""
    value_cap = None if full else VALUE_CAP
    out = []
    for side, output in (("A", report.a), ("B", report.b)):
        info = _side(output)
        where = ", ".join(f"{key} {info[key]}" for key in ("line", "backend", "soc", "provider") if info.get(key))
        out.append(f"{side}: {output.root}: torch {info['torch']} ({where}); {info['script']}")
    out += [f"warning: {warning}" for warning in report.warnings]
    if report.split is not None:
        out.append(report.split)
    if report.fixes:
        out.append("fixes whose status differs (A -> B):")
        out += _indent((change.show(value_cap) for change in report.fixes), "  ")
    if report.script_error is not None:
        change = report.script_error
        out.append(f"the script's own error: {_shown(change.a, value_cap)} -> {_shown(change.b, value_cap)}")
    common = common_launch_changes(report)
    if common:
        out.append(f"launch metadata changed the same way in every changed Triton kernel ({len(common)} key(s)):")
        out += _indent((change.show(value_cap) for change in common), "  ")
    shown = {(change.key, repr(change.a), repr(change.b)) for change in common}
    out.append("")
    for graph in report.graphs:
        lines = _render_graph(graph, verbose, value_cap, shown)
        detailed = len(lines) > 1
        out += ([""] if detailed and out[-1] != "" else []) + lines + ([""] if detailed else [])
    counts = report.counts()
    kernels = ", ".join(f"{counts[f'kernels_{status}']} {status}" for status in _STATUSES)
    out += [
        *([""] if out[-1] != "" else []),
        f"{counts['graphs_compared']} graph(s) compared, {counts['graphs_different']} different, "
        f"{counts['graphs_only_in_a']} only in A, {counts['graphs_only_in_b']} only in B; kernels: {kernels}; "
        f"{counts['wrappers_changed']} wrapper file(s) changed",
        "different" if report.different else "no differences in the generated code",
    ]
    return "\n".join(out)


def common_launch_changes(report: Report) -> list[Difference]:
    """The launch-metadata changes every changed kernel with launch metadata shares (a torch upgrade's new
    defaults), when there are at least two such kernels and COMMON_MIN such changes: shown once, not per kernel."""
    launches = [
        kernel.launch
        for graph in report.graphs
        for kernel in graph.kernels
        if kernel.status == "changed" and kernel.launch and not kernel.launch_omitted
    ]
    if len(launches) < 2:
        return []
    shared = set.intersection(*({(c.key, repr(c.a), repr(c.b)) for c in launch} for launch in launches))
    common = [change for change in launches[0] if (change.key, repr(change.a), repr(change.b)) in shared]
    return common if len(common) >= COMMON_MIN else []


def _render_graph(
    graph: GraphDiff, verbose: bool, value_cap: int | None, shown: set[tuple[str, str, str]]
) -> list[str]:
    if graph.a is None or graph.b is None:
        present = graph.a if graph.a is not None else graph.b
        assert present is not None
        kernels = ", ".join(present.get("kernels", [])) or "no kernels"
        return [f"{graph.label}: only in {graph.only_in} ({_describe(present)}; {kernels})"]
    where = (
        _describe(graph.a)
        if _describe(graph.a) == _describe(graph.b)
        else f"{_describe(graph.a)} / {_describe(graph.b)}"
    )
    same_kernels = sum(1 for kernel in graph.kernels if kernel.status == "same")
    if not graph.different:
        return [f"{graph.label} ({where}): identical ({same_kernels} kernel(s))"]
    out = [f"{graph.label} ({where}):"]
    out += _indent((change.show(value_cap) for change in graph.changes), "  ")
    for kernel in graph.kernels:
        if kernel.status != "same":
            out += _render_kernel(kernel, value_cap, shown)
    if same_kernels:
        out.append(f"  {same_kernels} kernel(s) identical")
    for wrapper in graph.wrappers:
        if wrapper.diff is None:
            out.append(f"  {wrapper.file}: only in {wrapper.only_in}")
        elif wrapper.diff.changed:
            hint = "" if verbose else " (--verbose shows the diff)"
            out.append(f"  {wrapper.file}: {wrapper.diff.counts()} lines{hint}")
            if verbose:
                out += _indent(_diff_lines(wrapper.diff), "    ")
    return out


def _diff_lines(diff: TextDiff) -> list[str]:
    tail = [f"... {diff.omitted} more diff line(s) (--full shows all)"] if diff.omitted else []
    return diff.lines + tail


def _render_kernel(kernel: KernelDiff, value_cap: int | None, shown: set[tuple[str, str, str]]) -> list[str]:
    if kernel.status in ("added", "removed"):
        return [f"  kernel {kernel.a or kernel.b}: {kernel.status}"]
    name = kernel.a if kernel.a == kernel.b else f"{kernel.a} -> {kernel.b} (renamed; matched by {kernel.matched_by})"
    if kernel.status == "renamed":
        return [f"  kernel {name}: otherwise identical"]
    launch = [change for change in kernel.launch if (change.key, repr(change.a), repr(change.b)) not in shown]
    count = len(kernel.launch) + kernel.launch_omitted
    parts = [
        part
        for part, present in (
            ("definition", kernel.defined_with),
            ("heuristic", kernel.heuristic),
            (f"launch metadata ({count} key{'s' if count != 1 else ''})", kernel.launch),
            (f"body ({kernel.body.counts() if kernel.body else ''})", kernel.body),
        )
        if present
    ]
    out = [f"  kernel {name}: {', '.join(parts)} changed"]
    if kernel.note:
        out.append(f"    note: {kernel.note}")
    for change in (kernel.defined_with, kernel.heuristic):
        if change is not None:
            out.append(f"    {change.show(value_cap)}")
    if len(launch) < len(kernel.launch):
        out.append(f"    the {len(kernel.launch) - len(launch)} launch metadata change(s) above, and:")
    out += _indent((change.show(value_cap) for change in launch), "    ")
    if kernel.launch_omitted:
        out.append(f"    ... {kernel.launch_omitted} more launch metadata change(s) (--full shows all)")
    if kernel.body is not None:
        out.append("    body:")
        out += _indent(_diff_lines(kernel.body), "      ")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat diff",
        description="Compare two `codegen --out` directories (e.g. one script on two torch lines) graph by graph: "
        "graphs, kernels (launch metadata and body) and wrappers. Exit 0: no differences, 1: differences, "
        "2: trouble.",
    )
    parser.add_argument("dir_a", metavar="DIR_A", help="a codegen output directory (the baseline)")
    parser.add_argument("dir_b", metavar="DIR_B", help="another codegen output directory")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--verbose", "-v", action="store_true", help="show the wrappers' diffs too")
    parser.add_argument(
        "--context", type=_context, default=3, metavar="N", help="context lines in diffs (default: %(default)s)"
    )
    parser.add_argument("--full", action="store_true", help="do not cap diffs and metadata listings")
    return parser


def _context(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of lines") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more lines")
    return value


def diff_main(argv: Sequence[str] | None = None) -> int:
    """The ``diff`` command: prints the comparison, returns the exit code (0 same, 1 different, 2 trouble)."""
    args = build_parser().parse_args(argv)
    settings = Settings(context=args.context, full=args.full)
    try:
        a, b = load(Path(args.dir_a)), load(Path(args.dir_b))
        report = compare(a, b, settings)
    except NotACodegenOutput as err:
        print(f"npu_inductor_compat diff: {err}", file=sys.stderr)
        return TROUBLE
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render(report, verbose=args.verbose, full=args.full))
    return DIFFERENT if report.different else SAME


if __name__ == "__main__":
    sys.exit(diff_main())
