"""Benchmark: the wall time of plain `pytest` (the fast tier) on this torch line, in one process and under
pytest-xdist with 2 workers. Goal: <= 90 s warm on 2 cores. Prints figures; asserts nothing about speed."""

# Run: python tests/benchmarks/bench_fast_tier.py [--runs N]

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def once(*extra: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    seconds = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(extra)} failed: {last}")
    return seconds, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}, {args.runs} runs each (the first run warms the disk cache)")
    for label, extra in (("one process", ()), ("pytest-xdist -n 2", ("-n", "2"))):
        times = []
        for _ in range(args.runs):
            seconds, last = once(*extra)
            times.append(seconds)
        median, low, high = statistics.median(times), min(times), max(times)
        print(f"{label:20s} median {median:6.1f} s  (min {low:.1f}, max {high:.1f})  {last}")


if __name__ == "__main__":
    main()
