"""`codegen --execute` in the run's report: the totals summary.json holds, each graph's column in the table, and the
closing lines naming graph, kernel and config for every mismatch or error (which make the run exit 1)."""

from __future__ import annotations

import sys
from typing import Any

NEVER_CALLED = "the script never called this compiled graph, so its generated code never ran"
# What Triton's interpreter shows and what it cannot (said with every run, and in docs/codegen.md)
SCOPE = (
    "kernels ran in Triton's interpreter (Triton's semantics, with triton-ascend's arange and block shapes); a "
    "miscompile in triton-ascend's lowering cannot show there"
)


def graph_execution(graph: dict[str, Any]) -> dict[str, Any]:
    """A graph summary's execution entry; "not run" with the reason when it has none."""
    found: dict[str, Any] | None = graph.get("execution")
    if found is not None:
        return found
    if graph.get("error") is not None:
        return {"status": "not run", "reason": "the graph failed to generate"}
    return {"status": "not run", "reason": NEVER_CALLED}


def totals(graphs: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json's ``execution``: graphs per verdict, kernel launches and config runs, seconds."""
    executions = [graph_execution(graph) for graph in graphs]
    counts = {status: 0 for status in ("match", "mismatch", "error", "not run")}
    for execution in executions:
        counts[execution["status"]] += 1
    return {
        "graphs": counts,
        "launches": sum(execution.get("launches", 0) for execution in executions),
        "configs": sum(execution.get("configs", 0) for execution in executions),
        "configs_not_run": sum(execution.get("configs_not_run", 0) for execution in executions),
        "seconds": round(sum(execution.get("seconds", 0.0) for execution in executions), 2),
        "scope": SCOPE,
    }


def column(graph: dict[str, Any]) -> str:
    """The table's words for a graph's execution."""
    execution = graph_execution(graph)
    status = execution["status"]
    if status == "match":
        return f"executed: match ({execution.get('configs', 0)} config runs)"
    if status == "not run":
        return "executed: not run"
    wrong = execution.get("first_wrong")
    where = f" in {wrong['kernel']}" if wrong else ""
    return f"EXECUTED: {status.upper()}{where}"


def config_words(run: dict[str, Any]) -> str:
    """A config run's config as the reports name it; a kernel launched without autotune constants (a template's one
    config: its constants are in its source) has none to name."""
    return str(run.get("config") or "its one config, constants in its source")


def problems(graphs: list[dict[str, Any]]) -> list[str]:
    """One line per mismatch or error: graph, kernel, config, and what differs."""
    lines = []
    for graph in graphs:
        execution = graph_execution(graph)
        head = f"graph {graph['index']}"
        if execution["status"] == "not run" and execution.get("reason") not in (None, NEVER_CALLED):
            lines.append(f"{head}: not run: {execution['reason']}")
        if execution["status"] not in ("mismatch", "error"):
            continue
        for name, kernel in execution.get("kernels", {}).items():
            if kernel["status"] == "match":
                continue
            config = kernel.get("config", {})
            detail = config.get("detail", {})
            what = (
                f"{detail.get('type')}: {detail.get('message', '')[:160]}"
                if config.get("status") == "error"
                else f"{config.get('buffer')} disagrees with {config.get('against')}: {detail.get('problem')}"
            )
            lines.append(f"{head}: kernel {name} ({config_words(config)}): {kernel['status']}: {what}")
        if execution.get("error") is not None:
            error = execution["error"]
            lines.append(f"{head}: the compiled module raised {error['type']}: {error['message'][:200]}")
        for value in execution.get("values", []):
            if value["status"] == "mismatch":
                lines.append(f"{head}: {value['value']}: {value['problem']}")
        if execution["status"] == "mismatch" and execution.get("first_wrong") is None:
            lines.append(f"{head}: no kernel named: {execution.get('localised')}")
    return lines


def say(summary: dict[str, Any], quiet: bool) -> bool:
    """The closing lines; whether the execution failed the run (a mismatch or an error)."""
    done = summary.get("execution")
    if done is None:
        return False
    counts = done["graphs"]
    lines = problems(summary["graphs"])
    failed = bool(counts["mismatch"] or counts["error"])
    if failed or not quiet:
        verdicts = ", ".join(f"{count} {status}" for status, count in counts.items() if count)
        skipped = f", {done['configs_not_run']} config(s) not run (--max-configs)" if done["configs_not_run"] else ""
        print(
            f"execute: {verdicts or 'no graph'} ({done['launches']} kernel launches, {done['configs']} config runs"
            f"{skipped}, {done['seconds']:.1f} s; {SCOPE})",
            file=sys.stderr,
        )
    for line in lines:
        print(line, file=sys.stderr)
    return failed
