"""Benchmark: what `import torch` pays for this package, in fresh processes: the autoload entry point's whole work
(import and arm it; goal <= 3 ms on 2 idle cores), in ms and against a bare `import torch`, and a plain
``import npu_inductor_compat``. Prints figures, asserts none. Run: python tests/benchmarks/bench_import.py [--runs N]"""

# torch's own autoload is switched off in the measured processes so the package is imported where it is timed, and
# bytecode is written first (as an installed package has it).

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

MEASURE = "import time, torch; t = time.perf_counter(); import npu_inductor_compat; print(time.perf_counter() - t)"
ENTRY_POINT = (
    "import time, torch; t = time.perf_counter(); from npu_inductor_compat.autoload import autoload, armed; "
    "autoload(); elapsed = time.perf_counter() - t; assert armed(); print(elapsed)"
)
# `import torch` alone, timed in the process the same way (its own autoload off, as above)
BARE_TORCH = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
ENV = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "NPU_INDUCTOR_COMPAT_AUTOLOAD": "1"}
WHOLE = "import torch{extra}"


def run(code: str) -> float:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | ENV
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
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

    run(ENTRY_POINT)  # writes the bytecode
    entry_point = [run(ENTRY_POINT) for _ in range(args.runs)]
    bare = [run(BARE_TORCH) for _ in range(args.runs)]
    in_process = [run(MEASURE) for _ in range(args.runs)]
    with_pkg = [wall(WHOLE.format(extra="; import npu_inductor_compat")) for _ in range(args.runs)]
    without = [wall(WHOLE.format(extra="")) for _ in range(args.runs)]
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {args.runs} fresh processes each")
    low, mid = min(entry_point) * 1e3, statistics.median(entry_point) * 1e3
    ratio = statistics.median(entry_point) / statistics.median(bare)
    print(
        f"autoload entry point, import + arm (in-process, after import torch): min {low:.2f} ms, median {mid:.2f} ms "
        f"(goal <= 3), {ratio:.2%} of a bare import torch ({statistics.median(bare) * 1e3:.0f} ms)"
    )
    extra_ms = statistics.median(in_process) * 1e3
    print(f"import npu_inductor_compat after import torch (in-process): median {extra_ms:.2f} ms")
    print(
        f"whole process: import torch {statistics.median(without):.3f} s, "
        f"+ npu_inductor_compat {statistics.median(with_pkg):.3f} s "
        f"(difference {(statistics.median(with_pkg) - statistics.median(without)) * 1e3:+.1f} ms, within noise)"
    )


if __name__ == "__main__":
    main()
