"""The real-model corpus (``examples/models/``) through ``codegen --check-kernels`` on this torch, as a markdown table:
per model provider, exit code, graphs, kernels accepted or rejected by class, and with --execute the graphs matching
eager. Run: ``python -m npu_inductor_compat.tools.simulated.kernels.model_corpus examples/models --out F``."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.codegen_report import first_line
from npu_inductor_compat.tools.simulated.kernels.corpus import run_script


def rejection_class(message: str, width: int = 80) -> str:
    """The compiler's first line, shortened to what a class of failures shares: no locations, names or numbers."""
    text = re.sub(r"(/[^\s:]+)+(:\d+)*:?", "", message)  # file paths and their line:column
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)  # quoted names
    for noise in ("decltype(auto) ", "virtual ", "LogicalResult "):  # a C++ signature's return type
        text = text.replace(noise, "")
    text = re.sub(r"\b\d+\b", "N", text)
    text = " ".join(text.split()).strip(" :")
    return first_line(text, width)


def fallback_class(error: str, width: int = 80) -> str:
    """What made torch_npu fall back: the last line of its check's error (the compiler's reason), numbers as N."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return first_line(re.sub(r"\b\d+\b", "N", lines[-1]), width) if lines else "(no message)"


EXECUTE_TIMEOUT = 6 * 3600  # a model's --execute runs every autotuner config in Triton's interpreter: hours at worst


def model_entry(script: Path, out: Path, provider: str | None = None, options: Sequence[str] = ()) -> dict[str, Any]:
    """codegen --check-kernels of one model (``provider``; None: codegen's default; other codegen ``options``): the
    provider that ran, exit code, graphs, kernels, accepted kernels, rejected by class, and what --execute found."""
    start = time.monotonic()
    timeout = EXECUTE_TIMEOUT if "--execute" in options else 1800
    found = run_script(script, out, provider, options, timeout)
    entry: dict[str, Any] = {"model": script.stem, "seconds": round(time.monotonic() - start, 1)}
    if "graphs" not in found:  # no summary.json: codegen itself failed
        return {
            **entry,
            "provider": provider,
            "exit": None,
            "graphs": 0,
            "kernels": 0,
            "accepted": 0,
            "rejected": {},
            "error": found["error"],
        }
    first_rejection: dict[str, str] = {}
    for rejected in found["rejected"]:  # a kernel is rejected when any of its autotune configs is
        first_rejection.setdefault(rejected["kernel"], rejection_class(rejected["message"]))
    summary = json.loads((out / "summary.json").read_text())
    return {
        **entry,
        "provider": found.get("provider"),
        "exit": found["exit"],
        "graphs": found["graphs"],
        "kernels": found["kernels"],
        "accepted": found["kernels"] - len(first_rejection),
        "rejected": dict(Counter(first_rejection.values()).most_common()),
        "cpu_fallback_ops": len(summary.get("cpu_fallback") or {}),
        # torch_npu's own fallbacks (linear -> no_linear after its TTIR check failed): they fail the run too
        "torch_npu_fallbacks": [
            fallback_class(fallback.get("error") or "")
            for fallback in summary.get("torch_npu_wheel", {}).get("fallbacks", [])
        ],
        "triton_ascend": found.get("triton_ascend"),
        "error": found.get("error"),
        **({"run": run_entry(found["execution"], found["cpp_wrapper"])} if found.get("execution") else {}),
    }


def run_entry(execution: dict[str, Any], cpp_wrapper: bool) -> dict[str, Any]:
    """What codegen --execute found: graphs per verdict (summary.json's ``execution``), the wrapper that ran."""
    graphs = execution["graphs"]
    return {"wrapper": "C++" if cpp_wrapper else "Python", **graphs, "seconds": execution.get("seconds")}


def run_cell(run: dict[str, Any] | None) -> str:
    """The README's words for a model's --execute: ``run M/N`` (Python wrapper) or ``C++ M/N``, then what did not
    match."""
    if run is None:
        return "-"
    total = sum(run[status] for status in ("match", "mismatch", "error", "not run"))
    cell = f"{'C++' if run['wrapper'] == 'C++' else 'run'} {run['match']}/{total}"
    others = [f"{run[status]} {status}" for status in ("mismatch", "error", "not run") if run[status]]
    return cell + (f" ({', '.join(others)})" if others else "")


def table(entries: list[dict[str, Any]], torch_version: str) -> str:
    versions = sorted({entry["triton_ascend"] for entry in entries if entry.get("triton_ascend")})
    lines = [
        f"torch {torch_version}, triton-ascend {', '.join(versions) or '?'} (`codegen --check-kernels`):",
        "",
    ]
    executed = any("run" in entry for entry in entries)
    header = ["model", "provider", "exit", "graphs", "kernels", "accepted", "rejected (by class)"]
    header += ["executed (`--execute`)"] if executed else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for entry in entries:
        rejected = "; ".join(f"{count} `{name}`" for name, count in entry["rejected"].items()) or "0"
        fallbacks = Counter(entry.get("torch_npu_fallbacks") or [])
        if fallbacks:
            rejected += "; torch_npu fell back: " + "; ".join(f"{count} `{name}`" for name, count in fallbacks.items())
        if entry.get("error"):
            rejected += f" (error: {first_line(entry['error'], 70)})"
        exit_code = "-" if entry["exit"] is None else str(entry["exit"])
        provider = entry.get("provider") or "-"  # None: codegen failed before saying which ran
        cells = [entry["model"], provider, exit_code, entry["graphs"], entry["kernels"], entry["accepted"], rejected]
        cells += [run_cell(entry.get("run"))] if executed else []
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npu_inductor_compat.tools.simulated.kernels.model_corpus")
    parser.add_argument("models", type=Path, help="a folder of model scripts (examples/models)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON of every model's entry")
    parser.add_argument("--work", type=Path, default=None, help="where codegen writes (default: a temporary folder)")
    parser.add_argument(
        "--provider", default=None, help="codegen's --provider (default: codegen's own: torch_npu's where paired)"
    )
    parser.add_argument(
        "--execute", action="store_true", help="codegen --execute: the generated code run against eager"
    )
    parser.add_argument("--cpp-wrapper", action="store_true", help="codegen --cpp-wrapper (with --execute: C++ runs)")
    parser.add_argument("--max-configs", default=None, metavar="N", help="codegen --max-configs N")
    args = parser.parse_args(argv)
    options = [*(["--execute"] if args.execute else []), *(["--cpp-wrapper"] if args.cpp_wrapper else [])]
    if args.max_configs is not None:  # codegen checks the number (it bounds the kernel check too)
        options += ["--max-configs", str(args.max_configs)]
    scripts = sorted(args.models.glob("*.py"))
    if not scripts:
        parser.error(f"{args.models}: no model scripts (*.py)")
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work if args.work is not None else Path(scratch)
        entries = []
        for script in scripts:
            entries.append(model_entry(script, work / script.stem, args.provider, options))
            print(f"{script.stem}: exit {entries[-1]['exit']} in {entries[-1]['seconds']} s", file=sys.stderr)
    torch_version = importlib.metadata.version("torch").split("+")[0]
    args.out.write_text(json.dumps({"torch": torch_version, "models": entries}, indent=2) + "\n")
    print(table(entries, torch_version))
    # rejected kernels are findings (in the table); a model whose script failed or compiled nothing fails the run
    failed = [entry["model"] for entry in entries if entry["error"] or not entry["graphs"]]
    if failed:
        print(f"no clean run for {', '.join(failed)} (errors in {args.out})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
