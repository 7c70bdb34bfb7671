"""What `codegen --execute` costs beside plain `codegen`, per README model (prints figures; asserts nothing)."""

# Each model of examples/models runs twice through `python -m npu_inductor_compat codegen` in a fresh interpreter
# (this torch line's default provider unless --provider): once plain, once with --execute (every autotuner config of
# every kernel in Triton's interpreter, the graphs compared with eager). It prints the wall time of each, their ratio
# (the goal: at most 3x), the seconds spent executing (summary.json's `execution`) and the graphs that
# matched, in the README's words. Needs the corpus session's venv (transformers, torchvision), offline.
# Run: HF_HUB_OFFLINE=1 python tests/benchmarks/bench_execute.py [--models bert gpt2] [--provider stock]
#      [--max-configs N] (hours for every model under torch_npu's codegen: its kernels have many configs)

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


def codegen(script: Path, out: Path, options: list[str]) -> tuple[float, dict[str, Any] | None, str]:
    """Wall seconds of one codegen run, its summary's `execution` (None without --execute) and its error, if any."""
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script), "--out", str(out), *options]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    summary = out / "summary.json"
    if not summary.is_file():
        return seconds, None, f"codegen exited {done.returncode}: {done.stderr.strip()[-300:]}"
    found = json.loads(summary.read_text())
    error = (found.get("script_error") or {}).get("message") or ""
    return seconds, found.get("execution"), error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None, help="model names (default: every examples/models script)")
    parser.add_argument("--provider", default=None, help="codegen --provider (default: codegen's own)")
    parser.add_argument("--max-configs", default=None, help="codegen --max-configs N for the executed run")
    args = parser.parse_args()
    import torch

    from npu_inductor_compat.tools.simulated.kernels.model_corpus import run_cell, run_entry

    scripts = sorted(MODELS.glob("*.py"))
    if args.models:
        unknown = set(args.models) - {script.stem for script in scripts}
        if unknown:
            parser.error(f"no such model in {MODELS}: {', '.join(sorted(unknown))}")
        scripts = [script for script in scripts if script.stem in args.models]
    provider = ["--provider", args.provider] if args.provider else []
    executed = [*provider, "--execute", *(["--max-configs", args.max_configs] if args.max_configs else [])]
    print(f"torch {torch.__version__}, provider {args.provider or 'default'}; seconds of wall time on this machine")
    print("| model | codegen | codegen --execute | ratio | executing | graphs |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for script in scripts:
            plain, _, error = codegen(script, Path(scratch) / f"{script.stem}-plain", provider)
            run, execution, run_error = codegen(script, Path(scratch) / f"{script.stem}-execute", executed)
            verdicts = run_entry(execution, cpp_wrapper=False) if execution else None
            spent = execution.get("seconds") if execution else None
            cells = [script.stem, f"{plain:.0f}", f"{run:.0f}", f"{run / plain:.1f}x", spent, run_cell(verdicts)]
            print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
            if error or run_error:
                print(f"  {script.stem}: {error or run_error}", file=sys.stderr)


if __name__ == "__main__":
    main()
