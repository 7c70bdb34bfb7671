"""What `codegen --check-kernels` costs per kernel config (prints figures; asserts nothing)."""

# Runs the codegen command with --check-kernels on an example (default: examples/flex_attention.py) and prints, from
# its summary.json, the number of kernel configs lowered by triton-ascend's front end and the seconds each stage took
# per config (AST -> TTIR, TTIR passes, triton-adapter-opt to linalg), plus the whole check's wall time (which
# includes starting the worker: importing torch and triton-ascend).
#
# Run: python tests/benchmarks/bench_kernel_check.py [SCRIPT]

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # the tests' one codegen harness, as conftest.py loads it
from npu_compat_test_codegen import run_codegen  # noqa: E402

EXAMPLES = TESTS.parent / "examples"


def main() -> None:
    script = sys.argv[1] if len(sys.argv) > 1 else str(EXAMPLES / "flex_attention.py")
    with tempfile.TemporaryDirectory() as scratch:
        # stock Inductor's kernels, whatever the default on this torch
        done = run_codegen(script, "--check-kernels", out=Path(scratch) / "out", provider="stock")
        summary = done.summary
        if summary is None:
            raise SystemExit(f"codegen wrote no summary (exit {done.returncode}): {done.stderr[-2000:]}")
    check = summary["kernel_check"]
    results = [r for graph in summary["graphs"] for rs in graph["kernel_check"].values() for r in rs]
    print(
        f"torch {summary['torch']}, triton-ascend {check['triton_ascend']}, {Path(script).name}: {len(results)} "
        f"kernel configs, {check['rejected']} rejected, {check['seconds']} s for the whole check"
    )
    for stage in check["stages"]:
        times = [r["seconds"][stage] for r in results if stage in (r.get("seconds") or {})]
        if times:
            print(f"  {stage:12s} median {statistics.median(times) * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
