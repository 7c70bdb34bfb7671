"""The codegen diff's text report: a header per side, what differs for every graph (identical ones in one line),
launch-metadata changes all changed kernels share listed once, then the counts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from npu_inductor_compat.tools.simulated.compare.diff_compare import STATUSES, GraphDiff, KernelDiff, Report, side_info
from npu_inductor_compat.tools.simulated.compare.diff_values import Difference, TextDiff, show_value

VALUE_CAP = 160  # characters of one metadata value
COMMON_MIN = 3  # launch-metadata changes every changed kernel shares are listed once from this many on


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
        info = side_info(output)
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
        out.append(f"the script's own error: {show_value(change.a, value_cap)} -> {show_value(change.b, value_cap)}")
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
    kernels = ", ".join(f"{counts[f'kernels_{status}']} {status}" for status in STATUSES)
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
    note = diff.note()
    return ([f"note: {note}"] if note else []) + diff.lines + tail


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
