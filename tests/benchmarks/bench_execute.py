"""What `codegen --execute` costs beside plain `codegen`, per README model (prints figures; asserts nothing)."""

# Each model of examples/models runs twice through `codegen` (the tests' run_codegen: a fresh interpreter, the clean
# child environment; this torch line's default provider unless --provider): once plain, once with --execute (every
# autotuner config of every kernel in Triton's interpreter, the graphs compared with eager). It prints the wall time
# of each, their ratio (the goal: at most 3x), the seconds spent executing (summary.json's `execution`) and
# the graphs that matched, in the README's words. Needs the corpus session's venv (transformers, torchvision), offline.
# Run: HF_HUB_OFFLINE=1 python tests/benchmarks/bench_execute.py [--models bert gpt2] [--provider stock]
#      [--max-configs N] (hours for every model under torch_npu's codegen: its kernels have many configs)

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # the tests' one codegen harness, as conftest.py loads it
from npu_compat_test_codegen import run_codegen  # noqa: E402

MODELS = TESTS.parent / "examples" / "models"
TIMEOUT = 6 * 3600.0  # every autotuner config interpreted: hours at worst under torch_npu's codegen


def codegen(
    script: Path, out: Path, options: list[str], provider: str | None
) -> tuple[float, dict[str, Any] | None, str]:
    """Wall seconds of one codegen run, its summary's `execution` (None without --execute) and its error, if any."""
    start = time.monotonic()
    done = run_codegen(script, *options, out=out, provider=provider, timeout=TIMEOUT)
    seconds = time.monotonic() - start
    if done.summary is None:
        return seconds, None, f"codegen exited {done.returncode}: {done.stderr.strip()[-300:]}"
    error = (done.summary.get("script_error") or {}).get("message") or ""
    return seconds, done.summary.get("execution"), error


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
    executed = ["--execute", *(["--max-configs", args.max_configs] if args.max_configs else [])]
    print(f"torch {torch.__version__}, provider {args.provider or 'default'}; seconds of wall time on this machine")
    print("| model | codegen | codegen --execute | ratio | executing | graphs |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for script in scripts:
            plain, _, error = codegen(script, Path(scratch) / f"{script.stem}-plain", [], args.provider)
            run, execution, run_error = codegen(
                script, Path(scratch) / f"{script.stem}-execute", executed, args.provider
            )
            verdicts = run_entry(execution, cpp_wrapper=False) if execution else None
            spent = execution.get("seconds") if execution else None
            cells = [script.stem, f"{plain:.0f}", f"{run:.0f}", f"{run / plain:.1f}x", spent, run_cell(verdicts)]
            print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
            if error or run_error:
                print(f"  {script.stem}: {error or run_error}", file=sys.stderr)


if __name__ == "__main__":
    main()
