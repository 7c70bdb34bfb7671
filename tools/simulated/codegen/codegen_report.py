"""What `codegen` prints: progress on stderr, the graph table, notes on --without-fix, and the closing lines that
say what the run proves and decide its exit code."""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.output import SUMMARY
from npu_inductor_compat.tools.simulated.execution.execute_report import config_words

# codegen --execute's progress inside a graph: on a terminal one line refreshed this often (seconds), else a line
# at most this often, so a log of a long run shows it is moving without a line per launch
REFRESH = {True: 2.0, False: 10.0}


@dataclass
class _Running:
    """The graph whose compiled module is executing: what has run of it so far."""

    graph: int
    kernels: int  # the graph's kernels
    started: float
    shown: float
    launched: set[str] = field(default_factory=set)
    launches: int = 0
    configs: int = 0


class Progress:
    """Progress and announcements on stderr (silent with --quiet)."""

    def __init__(self, quiet: bool, stream: Any = None, clock: Any = time.monotonic) -> None:
        self.quiet, self.stream, self.clock = quiet, stream, clock
        self.running: _Running | None = None
        self.open_line = False  # a terminal progress line is showing

    def say(self, message: str) -> None:
        if not self.quiet:
            self._end_line()
            print(message, file=self.stream or sys.stderr, flush=True)

    def launched(self, record: Any, launch: Any) -> None:
        """codegen --execute: a kernel launch of graph ``record`` has run every config it runs: kernels done of the
        graph's, launches, config runs and elapsed time, refreshed (see REFRESH)."""
        if self.quiet:
            return
        now = self.clock()
        running = self.running
        if running is None or running.graph != record.index:
            running = self.running = _Running(record.index, len(record.kernels), now, now)
        running.launched.add(launch.kernel)
        running.launches += 1
        running.configs += len(launch.checks) or len(launch.configs)
        stream = self.stream or sys.stderr
        tty = bool(getattr(stream, "isatty", lambda: False)())
        if now - running.shown < REFRESH[tty]:
            return
        running.shown = now
        text = (
            f"graph {running.graph} executing: {len(running.launched)}/{running.kernels} kernels, "
            f"{running.launches} launches, {running.configs} config runs, {now - running.started:.0f} s; "
            f"{launch.kernel}"
        )
        if tty:
            stream.write("\r" + text[:160].ljust(160))
            self.open_line = True
        else:
            stream.write(text + "\n")
        stream.flush()

    def _end_line(self) -> None:
        if self.open_line:
            stream = self.stream or sys.stderr
            stream.write("\r" + " " * 160 + "\r")
            self.open_line = False

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Under --quiet, what a phase prints on stderr (build and download announcements) is dropped."""
        if not self.quiet:
            yield
            return
        with contextlib.redirect_stderr(io.StringIO()):
            yield

    def graph(self, record: Any) -> None:
        where = f"on {record.device}"
        if record.kind == "backward" and record.forward is not None:
            where = f"of graph {record.forward} {where}"
        kernels = f"{len(record.kernels)} kernel{'s' if len(record.kernels) != 1 else ''}"
        if record.error is not None:
            outcome = f"FAILED: {record.error['type']}: {first_line(record.error['message'])}"
        elif record.status == "not npu":
            outcome = f"not npu (no npu tensor), {kernels}"
        else:
            outcome = f"{record.wrapper} wrapper, {kernels}" + (", dynamic" if record.dynamic else "")
        self.say(f"graph {record.index}: {record.kind} {where}: {outcome}, {record.seconds:.1f} s")
        failures = (record.error or {}).get("choice_failures") or []
        if failures:  # the cause upstream logged below the user's level (tools/simulated/codegen/choice_failures.py)
            first = failures[0]
            count = f"{len(failures)} template choice{'s' if len(failures) != 1 else ''}"
            self.say(f"  {count} failed to compile; the first, {first['choice']}: {first_line(first['error'], 160)}")

    def executed(self, record: Any) -> None:
        """codegen --execute: one line per graph when its compiled module has run, and what went wrong."""
        done = record.execution
        self.running = None
        runs = f"{len(done.launches)} launch(es), {sum(len(launch.configs) for launch in done.launches)} config run(s)"
        self.say(f"graph {record.index} executed: {done.status} ({runs}, {done.seconds:.1f} s)")
        if done.reason is not None:
            self.say(f"  not run: {first_line(done.reason, 160)}")
        if done.error is not None:
            self.say(f"  the compiled module raised {done.error['type']}: {first_line(done.error['message'], 160)}")
        for value in done.values:
            if value["status"] == "mismatch":
                self.say(f"  {value['value']}: {value['problem']}")
        if done.first_wrong is not None:
            wrong = done.first_wrong
            self.say(f"  first wrong kernel: {wrong['kernel']} ({config_words(wrong)}): {_why(wrong)}")
        elif done.localised is not None:
            self.say(f"  no kernel named: {done.localised}")


def _why(wrong: dict[str, Any]) -> str:
    detail = wrong.get("detail") or {}
    if wrong["status"] == "error":
        return f"{detail.get('type')}: {first_line(detail.get('message', ''), 120)}"
    return f"{wrong.get('buffer')} disagrees with {wrong.get('against')}: {detail.get('problem')}"


def first_line(message: str, width: int = 100) -> str:
    """The first line of an error message (with the next, when it ends in a colon that introduces it), or
    "(no message)" (a bare assert in Inductor has none); past ``width``
    it is cut at the last space before it (never inside a word) and ends with "..."."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    line = lines[0]
    if line.endswith(":") and len(lines) > 1:  # e.g. "backend='inductor' raised:", the error on the next line
        line = f"{line} {lines[1]}"
    if len(line) <= width:
        return line
    cut = line.rfind(" ", 0, width + 1)
    return line[: cut if cut > 0 else width].rstrip() + " ..."


def _graph_status(graph: dict[str, Any]) -> str:
    error = graph["error"]
    status: str = graph["status"] if error is None else f"{error['type']}: {first_line(error['message'], 90)}"
    if "header_check" in graph:
        status += ", headers ok" if graph["header_check"] == "ok" else ", HEADER CHECK FAILED"
    if "kernel_check" in graph:
        configs = [result for results in graph["kernel_check"].values() for result in results]
        rejected = sum(1 for result in configs if not result["ok"])
        if rejected:
            status += f", {rejected} of {len(configs)} KERNEL CONFIGS REJECTED by triton-ascend"
        else:
            status += f", {len(configs)} kernel configs lowered"
    if "execution" in graph:
        from npu_inductor_compat.tools.simulated.execution.execute_report import column

        status += ", " + column(graph)
    return status


def table(summary: dict[str, Any]) -> str:
    rows = [("graph", "compile", "kind", "device", "wrapper", "kernels", "status")]
    for graph in summary["graphs"]:
        kind = graph["kind"] + (f" of {graph['forward']}" if graph.get("forward") is not None else "")
        kind += " (dynamic)" if graph["dynamic"] else ""
        rows.append(
            (
                str(graph["index"]),
                graph["compile_id"] or "-",
                kind,
                graph["device"],
                graph["wrapper"],
                str(len(graph["kernels"])),
                _graph_status(graph),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:6], widths, strict=True)) + "  " + row[6]
        for row in rows
    )


def nothing_on_npu(summary: dict[str, Any]) -> str | None:
    """Why the run proves nothing about npu code generation, or None when some graph ran on npu."""
    graphs = summary["graphs"]
    if any("npu" in graph["device"].split("+") for graph in graphs):
        return None
    if not graphs:
        return "no graph was compiled: does the script call torch.compile on 'npu' tensors?"
    devices = sorted({graph["device"] for graph in graphs})
    return (
        f"nothing ran on npu: {len(graphs)} graph(s) compiled, on {', '.join(devices)}; move the model and its inputs "
        "to the npu (.to('npu')) before calling the compiled function"
    )


def failed_where(script_error: dict[str, Any]) -> str:
    """Where a script that compiled nothing failed: at an import, or elsewhere."""
    if script_error["type"] in ("ImportError", "ModuleNotFoundError"):
        return f"at import: {first_line(script_error['message'])}"
    return f"{script_error['type']}: {first_line(script_error['message'])}"


def fallback_line(counts: dict[str, int], shown: int = 5) -> str:
    """One line: how many calls of how many operators ran on the CPU, the most called first."""
    top = ", ".join(f"{name} {count}" for name, count in list(counts.items())[:shown])
    more = f", {len(counts) - shown} more" if len(counts) > shown else ""
    return (
        f"cpu fallback: {sum(counts.values())} call(s) of {len(counts)} operator(s) without an npu kernel ran on the "
        f"CPU: {top}{more} (all: cpu_fallback in summary.json)"
    )


def without_fix_notes(ids: Sequence[str], report: dict[str, Any], torch_version: str) -> list[str]:
    """One line per --without-fix ID whose disabling changes nothing on this torch (not needed, or not applied)."""
    from npu_inductor_compat.common.composition.backend_table import BackendChoice
    from npu_inductor_compat.common.composition.backends import backend_plan
    from npu_inductor_compat.dispatch import resolve
    from npu_inductor_compat.patching import absent_targets
    from npu_inductor_compat.registry import fix_records

    # the backend's device/backend/config layers (the report's backend was normalised when it was chosen)
    chosen = BackendChoice(report["backend"], "the report") if report["backend"] else None
    layers = backend_plan(chosen, resolve()[1].adapters).layers
    records = {record.id: record for record in (*fix_records(), *layers)}
    listed = {fix["id"] for fix in report["fixes"]}
    notes = []
    for fix_id in sorted(set(ids)):
        record = records.get(fix_id)
        absent = absent_targets(record) if record is not None else None
        if record is not None and report["line"] not in record.applies_to():
            notes.append(
                f"--without-fix {fix_id}: written for {', '.join(record.applies_to())}, not {report['line']} (torch "
                f"{torch_version}): disabling it changes nothing here"
            )
        elif absent is not None:
            notes.append(f"--without-fix {fix_id}: nothing to patch ({absent}): disabling it changes nothing here")
        elif record is not None and record.upstream_has_fix is not None and record.upstream_has_fix():
            notes.append(
                f"--without-fix {fix_id}: not needed on torch {torch_version} (upstream has it): disabling it "
                "changes nothing here"
            )
        elif fix_id not in listed:
            notes.append(
                f"--without-fix {fix_id}: not part of backend {report['backend']!r} on this torch: disabling it "
                "changes nothing here"
            )
    return notes


@dataclass
class Outcome:
    """What a finished run left to say: its summary and what failed in it."""

    summary: dict[str, Any]
    script_error: dict[str, Any] | None
    graphs_failed: bool
    refused: list[str]
    header_failures: int = 0
    kernel_failures: int = 0
    static_failures: list[dict[str, Any]] = field(default_factory=list)


def verdict(args: Any, outcome: Outcome, out: Path, progress: Progress) -> int:
    """Print the table and the closing lines of a run written to ``out``; its exit code."""
    summary, script_error = outcome.summary, outcome.script_error
    if not args.quiet:
        print(table(summary))
        print(f"provider: {args.provider_choice.describe()}")
        print(f"wrote {out / SUMMARY}")
    for problem in outcome.refused:
        print(f"npu_inductor_compat codegen: not deleted: {problem}", file=sys.stderr)
    if script_error is not None:
        message = first_line(script_error["message"]) if script_error["message"] else ""
        print(
            f"the script raised {script_error['type']}: {message} (traceback: {out / 'script_error.txt'})",
            file=sys.stderr,
        )
    if summary["cpu_fallback"]:
        progress.say(fallback_line(summary["cpu_fallback"]))
    nothing = nothing_on_npu(summary)
    if nothing is not None and script_error is not None and not summary["graphs"]:
        # the script failed before compiling anything: that is the reason, not a missing torch.compile
        nothing = f"the script failed before compiling any graph ({failed_where(script_error)})"
    if args.check_headers:
        _say_header_check(summary, outcome.header_failures, args.quiet)
    if args.check_kernels:
        _say_kernel_check(summary, args.quiet)
    torch_npu_trouble = _say_torch_npu(summary)
    if getattr(args, "execute", False):
        from npu_inductor_compat.tools.simulated.execution import execute_report

        torch_npu_trouble = execute_report.say(summary, args.quiet) or torch_npu_trouble
    for failure in outcome.static_failures:
        for problem in failure["problems"]:
            print(
                f"graph {failure['graph']}: {problem}: it cannot compile (static_check in summary.json)",
                file=sys.stderr,
            )
    failed = (args.check_headers and outcome.header_failures) or (args.check_kernels and outcome.kernel_failures)
    failed = failed or torch_npu_trouble or bool(outcome.refused) or bool(outcome.static_failures)
    if nothing is not None:  # last: why the run proves nothing, after what the checks had to say
        print(f"npu_inductor_compat codegen: {nothing}", file=sys.stderr)
    return 1 if script_error is not None or outcome.graphs_failed or failed or nothing is not None else 0


def _say_header_check(summary: dict[str, Any], failures: int, quiet: bool) -> None:
    check = summary.get("header_check", {})
    if check.get("error"):
        print(f"header check unavailable: {check['error']}", file=sys.stderr)
    elif failures:
        print(
            f"{failures} C++ wrapper(s) failed the header check (errors: header_check in summary.json)",
            file=sys.stderr,
        )
    elif not any(graph["wrapper"] == "cpp" and graph["files"]["wrapper"] for graph in summary["graphs"]):
        print("header check: no C++ wrapper was generated, so none was checked", file=sys.stderr)
    elif not quiet:
        print(f"every C++ wrapper compiles against torch's headers and {', '.join(check['headers'])}")


def _say_kernel_check(summary: dict[str, Any], quiet: bool) -> None:
    check = summary.get("kernel_check", {})
    if check.get("error"):
        print(f"kernel check: {check['error']}", file=sys.stderr)
    if check.get("triton_ascend") and not quiet:
        from npu_inductor_compat.tools.simulated.kernels.kernel_check import verdict as kernel_verdict

        verdict = kernel_verdict(check)
        kernels = check.get("kernels") or {}
        how = f"{check.get('lowered', check['configs'])} lowered now"
        if kernels.get("from_cache"):
            how += f", {kernels['from_cache']} kernel(s) from the verdict cache"
        if check.get("duplicates"):
            how += f", {check['duplicates']} duplicate kernel(s) checked once"
        if check.get("not_checked"):
            how += f"; {check['not_checked']} config(s) not checked (--max-configs {check['max_configs']})"
        print(
            f"triton-ascend {check['triton_ascend']} ({check['source']}): {check['configs']} kernel config(s) "
            f"to linalg ({how}) in {check['seconds']} s: {verdict} (messages: kernel_check in summary.json)"
        )


def _say_torch_npu(summary: dict[str, Any]) -> bool:
    """What torch_npu's own code did off its main path; whether that fails the run (a fallback, a missing stub)."""
    fallbacks = summary.get("torch_npu_wheel", {}).get("fallbacks", [])
    missing_stubs = summary["torch_npu_standin"].get("wheel", {}).get("missing_stubs", [])
    if fallbacks:
        print(
            f"torch_npu took {len(fallbacks)} fallback(s) from its main codegen path (per kernel: torch_npu_events "
            "in summary.json)",
            file=sys.stderr,
        )
    if missing_stubs:
        print(f"torch_npu reached native symbols with no stub: {', '.join(missing_stubs)}", file=sys.stderr)
    places = summary.get("torch_npu_wheel", {}).get("log", [])
    repeats = sum(place["count"] - 1 for place in places)
    if repeats:
        busiest = max(places, key=lambda place: place["count"])
        print(
            f"torch_npu logged {repeats} repeated line(s) below ERROR, not shown (each place's first was): "
            f"{busiest['count']} from {busiest['where']} ({first_line(busiest['first'], 80)}); "
            "torch_npu_wheel.log in summary.json",
            file=sys.stderr,
        )
    # torch_npu's TTIR check (run in a triton-ascend worker): a rejected kernel is one of the fallbacks above
    checks = summary.get("torch_npu_wheel", {}).get("checks", [])
    for result, said in (("failed", "rejected"), ("error", "could not check")):
        found = [check for check in checks if check["result"] == result]
        if found:
            lines = [line for line in found[0]["error"].splitlines() if line.strip()] or [""]
            # a compile error ends with the compiler's reason; a worker's error starts with what happened to it
            reason = lines[-1] if result == "failed" else lines[0]
            kernels = ", ".join(found[0]["kernels"]) or "(kernel unknown)"
            print(
                f"torch_npu's TTIR check {said} {len(found)} kernel(s), e.g. {kernels}: "
                f"{first_line(reason.strip(), 160)} (checks in summary.json)",
                file=sys.stderr,
            )
    return bool(fallbacks) or bool(missing_stubs)
