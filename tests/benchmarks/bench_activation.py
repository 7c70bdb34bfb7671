"""Benchmarks of zero-touch activation (prints figures; asserts nothing about speed)."""

# 1. `import torch` with this package's autoload entry point armed vs opted out (NPU_INDUCTOR_COMPAT_AUTOLOAD=0),
#    fresh processes, medians;
# 2. applying all of the triton backend's records at first use on the simulated NPU, Inductor's own imports excluded
#    (one warm-up activate/deactivate first), median of repeated activations;
# 3. compile time of a small CPU model with the package active vs not (fresh processes, caches off): it must not slow
#    other devices down.
#
# Run: python tests/benchmarks/bench_activation.py [--runs N]

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

IMPORT_TORCH = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"

FIRST_USE = """
import statistics, time
import torch
import npu_inductor_compat
from npu_inductor_compat.common.composition import providers
from npu_inductor_compat.tools.simulated.npu import device

device.setup()
providers.set_provider(device.PROVIDER)
npu_inductor_compat.activate("triton"); npu_inductor_compat.deactivate()  # Inductor's imports happen here
times = []
for _ in range({runs}):
    start = time.perf_counter()
    report = npu_inductor_compat.activate("triton")
    times.append(time.perf_counter() - start)
    npu_inductor_compat.deactivate()
print(len(report["applied"]), statistics.median(times))
"""

CPU_COMPILE = """
import time, torch
import torch._inductor.config as config
{activate}
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
x = torch.randn(32, 64)
with config.patch(force_disable_caches=True, fx_graph_cache=False):
    start = time.perf_counter()
    torch.compile(model)(x)
    print(time.perf_counter() - start)
"""


def run(code: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full)
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cores")
    armed = [float(run(IMPORT_TORCH, {"NPU_INDUCTOR_COMPAT_AUTOLOAD": "1"})) for _ in range(args.runs)]
    off = [float(run(IMPORT_TORCH, {"NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"})) for _ in range(args.runs)]
    extra_ms = (statistics.median(armed) - statistics.median(off)) * 1e3
    print(
        f"1. import torch: {statistics.median(armed):.3f} s armed vs {statistics.median(off):.3f} s opted out "
        f"(median of {args.runs}; difference {extra_ms:+.1f} ms)"
    )
    records, median = run(FIRST_USE.format(runs=args.runs)).split()
    print(f"2. first use, triton backend: {records} records applied in {float(median) * 1e3:.1f} ms (median)")
    compile_runs = max(3, args.runs // 2)
    active = [
        float(run(CPU_COMPILE.format(activate="import npu_inductor_compat; npu_inductor_compat.activate()")))
        for _ in range(compile_runs)
    ]
    plain = [
        float(run(CPU_COMPILE.format(activate=""), {"NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"})) for _ in range(compile_runs)
    ]
    print(
        f"3. CPU model compile: {statistics.median(active):.2f} s with the package active vs "
        f"{statistics.median(plain):.2f} s without (median of {compile_runs})"
    )


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - start:.0f} s)")
