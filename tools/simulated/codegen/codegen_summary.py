"""What a `codegen` run writes to --out: each graph's wrapper and kernels, the checks on them, and summary.json
(what ran, with what, and how it went)."""

from __future__ import annotations

import json
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.codegen_args import Invocation
from npu_inductor_compat.tools.simulated.codegen.codegen_report import Progress
from npu_inductor_compat.tools.simulated.codegen.output import SUMMARY, Output


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def write_graph(output: Output, graph: Any) -> dict[str, Any]:
    """Write one graph's files; return its index entry (paths relative to --out)."""
    from npu_inductor_compat.tools.simulated.codegen import headers
    from npu_inductor_compat.tools.simulated.codegen.capture import kernel_definition

    folder = f"graph_{graph.index}"
    files: dict[str, Any] = {"wrapper": None, "wrapper_module": None, "kernels": {}, "error": None}
    # "error": the graph's traceback file; "wrapper_error": why a C++ wrapper has no wrapper.cpp
    if graph.wrapper_source is not None:
        if graph.wrapper == "cpp":
            # Inductor hands back a Python module that compiles the C++ it carries: keep both, the C++ as C++
            files["wrapper_module"] = output.write(f"{folder}/wrapper_module.py", graph.wrapper_source)
            try:
                files["wrapper"] = output.write(f"{folder}/wrapper.cpp", headers.cpp_source(graph.wrapper_source))
            except ValueError as err:
                files["wrapper_error"] = f"no C++ found in the wrapper module: {err}"
        else:
            files["wrapper"] = output.write(f"{folder}/wrapper.py", graph.wrapper_source)
    for name, fragment in graph.kernels.items():
        safe = _safe_name(name)
        definition = kernel_definition(fragment)
        entry = {
            "defined_with": definition.method,
            "fragment": output.write(f"{folder}/kernels/{safe}.fragment.py", fragment),
            "source": None,
        }
        if definition.method == "triton" and definition.source is not None:
            entry["source"] = output.write(f"{folder}/kernels/{safe}.py", definition.source)
        files["kernels"][name] = entry
    if graph.error is not None:
        files["error"] = output.write(f"{folder}/error.txt", graph.error["traceback"])
    failed_run = getattr(graph.execution, "error", None)
    if failed_run is not None:  # codegen --execute: the compiled module raised
        files["execution_error"] = output.write(f"{folder}/execution_error.txt", failed_run["traceback"])
    return files


def write_graphs(output: Output, captured: list[Any], events: Any) -> list[dict[str, Any]]:
    """Each captured graph's files written, and its summary entry (with torch_npu's events per kernel, if any)."""
    graphs = []
    by_kernel = events.by_kernel() if events is not None else {}
    for graph in captured:
        entry = graph.summary()
        entry["files"] = write_graph(output, graph)
        if events is not None:  # what torch_npu's codegen did instead of its main path, per kernel
            entry["torch_npu_events"] = {name: by_kernel[name] for name in graph.kernels if name in by_kernel}
        graphs.append(entry)
        output.checkpoint()
    return graphs


def build(
    inv: Invocation,
    *,
    torch_version: str,
    line: str,
    standin: Any,
    imported_torch_npu: bool,
    events: Any,
    script_error: dict[str, Any] | None,
    graphs: list[dict[str, Any]],
    cpu_fallback: dict[str, int],
) -> dict[str, Any]:
    """summary.json's content, before the checks add theirs."""
    from npu_inductor_compat.activation import status
    from npu_inductor_compat.tools.simulated.npu import device

    args, state = inv.args, status()
    return {
        "script": str(inv.script),
        "argv": inv.script_args,
        "torch": torch_version,
        "line": line,
        "backend": state["backend"],
        "soc": inv.soc,
        "provider": args.provider,
        "provider_choice": args.provider_choice.to_json(),  # why that provider: the default, or --provider
        "cpp_wrapper": args.cpp_wrapper,
        "dynamic": any(graph["dynamic"] for graph in graphs),
        "dynamic_flag": args.dynamic,
        "without_fix": sorted(set(args.without_fix)),
        "kernel_metadata": inv.metadata,
        "torch_npu_standin": {**standin.summary(), "imported": standin.imported or imported_torch_npu},
        "npu_options": device.simulated_options(),  # what the script set with torch.npu.set_option & co
        **({"torch_npu_wheel": events.summary()} if events is not None else {}),
        "fixes": {fix["id"]: fix["status"] for fix in state["fixes"]},
        "script_error": None if script_error is None else {k: script_error[k] for k in ("type", "message")},
        "graphs": graphs,
        # aten operators with no npu kernel on the simulated NPU that ran on the CPU: calls per operator
        "cpu_fallback": dict(sorted(cpu_fallback.items(), key=lambda item: (-item[1], item[0]))),
        **({"execution": _execution_totals(graphs)} if args.execute else {}),
    }


def _execution_totals(graphs: list[dict[str, Any]]) -> dict[str, Any]:
    from npu_inductor_compat.tools.simulated.execution import execute_report

    for graph in graphs:  # a graph never called has its reason too
        graph["execution"] = execute_report.graph_execution(graph)
    return execute_report.totals(graphs)


def check(inv: Invocation, summary: dict[str, Any], progress: Progress) -> tuple[int, int, list[dict[str, Any]]]:
    """The checks asked for, and the static check, recorded in the summary: (C++ wrappers failing the header check,
    kernels failing the kernel check, the static check's failures)."""
    header_failures = kernel_failures = 0
    if inv.args.check_headers:
        with progress.muted():
            header_failures = check_headers(inv.output, summary, summary["torch"], progress)
    if inv.args.check_kernels:
        from npu_inductor_compat.tools.simulated.kernels import kernel_check

        with progress.muted():
            limit = inv.args.stage_limit or kernel_check.STAGE_LIMIT
            args = inv.args
            kernel_failures = kernel_check.check(
                inv.output.root, summary, limit, args.check_budget, args.jobs, args.max_configs, not args.no_cache
            )
    from npu_inductor_compat.tools.simulated.codegen import static_check

    return header_failures, kernel_failures, static_check.check(inv.output.read, summary)


def write(output: Output, summary: dict[str, Any]) -> list[str]:
    """summary.json written (listing every file of the run), the manifest finished; what could not be deleted."""
    summary["files"] = sorted({*output.written, SUMMARY})
    output.write(SUMMARY, json.dumps(summary, indent=2) + "\n")
    return output.finish()


def check_headers(output: Output, summary: dict[str, Any], torch_version: str, progress: Progress) -> int:
    """Compile each graph's C++ (graph_<i>/wrapper.cpp) against torch's headers and every paired torch_npu
    release's; record the results in the summary; return how many graphs failed."""
    from npu_inductor_compat.tools.simulated.codegen import headers

    try:
        sources = headers.torch_npu_headers(torch_version)
    except headers.HeaderCheckUnavailable as err:
        summary["header_check"] = {"headers": [], "error": str(err)}
        return sum(1 for graph in summary["graphs"] if graph["wrapper"] == "cpp")
    summary["header_check"] = {"headers": [source.description for source in sources], "error": None}
    failures = 0
    wrappers = [graph for graph in summary["graphs"] if graph["wrapper"] == "cpp" and graph["files"]["wrapper"]]
    progress.say(
        f"checking {len(wrappers)} C++ wrapper(s) with g++ -fsyntax-only against torch's headers and "
        f"{', '.join(source.description for source in sources)} (a few seconds each)"
    )
    for graph in wrappers:
        cpp = output.root / graph["files"]["wrapper"]
        errors = []
        for source in sources:
            ok, compiler_output = headers.check(cpp, source)
            if not ok:
                errors.append(f"against {source.description}:\n{compiler_output[-4000:]}")
        graph["header_check"] = "ok" if not errors else "\n".join(errors)
        failures += bool(errors)
    return failures
