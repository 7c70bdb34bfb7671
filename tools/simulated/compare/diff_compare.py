"""Two codegen outputs compared: graphs paired (diff_graphs.py), then per pair its fields, its kernels (launch
metadata key by key, the body as a diff) and its wrappers; the result as a `Report`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import ABSENT
from npu_inductor_compat.tools.simulated.compare.diff_graphs import match_graphs, match_kernels, split_change
from npu_inductor_compat.tools.simulated.compare.diff_input import CodegenOutput
from npu_inductor_compat.tools.simulated.compare.diff_noise import normalise, renamer
from npu_inductor_compat.tools.simulated.compare.diff_sources import (
    KernelSource,
    collapse_wrapper,
    fragment_source,
    read_kernel,
)
from npu_inductor_compat.tools.simulated.compare.diff_values import Difference, TextDiff, compare_values, text_diff

REPORT_VERSION = 1  # of the --json output
BODY_CAP = 40  # unified-diff lines shown per kernel body (--full: all)
WRAPPER_CAP = 120  # per wrapper, with --verbose
META_CAP = 40  # launch-metadata changes shown per kernel
# noise in launch metadata: filename is always __file__; backend_hash hashes torch's and Triton's sources, so it
# differs whenever torch does and says nothing about the kernel
IGNORED_LAUNCH_KEYS = ("filename", "inductor_meta.backend_hash")
# options that change the generated code: a difference means the two outputs are not a torch-only comparison
OPTION_KEYS = ("argv", "backend", "soc", "provider", "cpp_wrapper", "dynamic_flag", "without_fix", "kernel_metadata")
OLD_PROVIDER_NAMES = {"simulated-npu": "stock"}  # codegen's --provider names before torch_npu's became the default
# Counted as differences. A graph's compile id is shown in its heading, and Dynamo's recompile reasons are not
# compared: their wording changes between torch releases while the generated code may not.
GRAPH_FIELDS = ("status", "device", "dynamic", "wrapper")


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
                source = fragment_source(fragment) if fragment is not None else None
                source = source if source is not None else fragment
            if source is None:
                kernel = KernelSource("", body="", note="no source or fragment file in this output")
            else:
                kernel = read_kernel(source)
            self._kernels[name] = kernel
        return self._kernels[name]

    def own_text(self, name: str) -> str:
        if name not in self._own:
            self._own[name] = renamer({name: "<kernel>"})(self.kernel(name).text)
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
    rename = renamer({name_b: name_a} if name_b != name_a else {})
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
    body = text_diff(body_a, body_b, settings.context, settings.cap(BODY_CAP))
    result.body = body if body.changed else None
    if result.defined_with or result.heuristic or result.launch or result.body:
        result.status = "changed"
    elif name_a != name_b:
        result.status = "renamed"
    return result


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
    executed_a, executed_b = graph_a.get("execution"), graph_b.get("execution")
    if isinstance(executed_a, dict) and isinstance(executed_b, dict):  # both runs with --execute
        if executed_a.get("status") != executed_b.get("status"):
            result.changes.append(Difference("execution", _verdict(executed_a), _verdict(executed_b)))
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
    rename = renamer({name_b: name_a for name_a, name_b, _ in pairs if name_a != name_b})
    result.wrappers = _compare_wrappers(side_a, side_b, rename, settings)
    return result


def _verdict(execution: dict[str, Any]) -> str:
    """A graph's --execute verdict, with the kernel it names: ``error (triton_poi_fused_add_0)``."""
    wrong = execution.get("first_wrong")
    kernel = wrong.get("kernel") if isinstance(wrong, dict) else None
    return f"{execution.get('status')}" + (f" ({kernel})" if kernel else "")


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
        diff = text_diff(text_a[name], rename(text_b[name]), settings.context, settings.cap(WRAPPER_CAP))
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
            **{f"kernels_{status}": sum(1 for kernel in kernels if kernel.status == status) for status in STATUSES},
            "wrappers_changed": sum(
                1 for graph in self.graphs for wrapper in graph.wrappers if wrapper.diff is None or wrapper.diff.changed
            ),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": "npu-inductor-compat diff",
            "version": REPORT_VERSION,
            "different": self.different,
            "a": side_info(self.a),
            "b": side_info(self.b),
            "warnings": self.warnings,
            "split": self.split,
            "fixes": [change.to_json() for change in self.fixes],
            "script_error": None if self.script_error is None else self.script_error.to_json(),
            "counts": self.counts(),
            "graphs": [graph.to_json() for graph in self.graphs],
        }


STATUSES = ("changed", "renamed", "added", "removed", "same")


def side_info(output: CodegenOutput) -> dict[str, Any]:
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
    split = split_change(a.graphs, b.graphs)
    return Report(a, b, _warnings(a.summary, b.summary), fixes, script_error, graphs, split)
