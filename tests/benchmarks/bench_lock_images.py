"""Pinned host memory of the lock images under dynamic shapes (prints figures; asserts nothing)."""

# The NPU C++ wrapper initialises lock buffers with a stream-ordered copy from a pinned host image, one image per
# distinct lock layout. With unordered locks the layout depends on the launched blocks, so every distinct grid has its
# own image. This runs the whole wrapper of a graph (tests/emulated_acl/run_wrapper.py) against the emulated ACL runtime
# for 10,000 distinct grids of a kernel with unordered locks in mix mode, and prints the peak of pinned memory the
# emulation saw beside what the images would add up to without the runtime's bound (kLockImageBudget).
#
# Needs g++ and the torch_npu headers paired with this torch (downloaded once, like the tests').
# Run: python tests/benchmarks/bench_lock_images.py [--grids N]

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EMULATED = Path(__file__).resolve().parent.parent / "emulated_acl"
SCENARIO = {"sync_block_lock_layout": (1 << 32) | 1, "mix_mode": "mix", "auto_tile_and_bind_subblock": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=int, default=10_000)
    args = parser.parse_args()
    import torch

    from npu_inductor_compat.tools.simulated.codegen import headers
    from npu_inductor_compat.tools.simulated.execution import emulated_runtime

    (source,) = headers.torch_npu_headers(torch.__version__)
    npu = emulated_runtime.cached(source.include)  # built once into the tools' cache
    with tempfile.TemporaryDirectory() as scratch:
        # rows of 8: one block per row for the reduction kernel, so every size is a distinct grid
        sizes = [16 * (k + 2) for k in range(args.grids)]
        plan = {
            "scenarios": [SCENARIO],
            "cores": {"0": [24, 48]},
            "record": False,
            "phases": [{"device": 0, "sizes": sizes}],
        }
        path = Path(scratch) / "plan.json"
        path.write_text(json.dumps(plan))
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(EMULATED / "run_wrapper.py"), str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, **npu.env()},
            check=True,
        )
        seconds = time.perf_counter() - start
    report = json.loads(done.stdout.strip().splitlines()[-1])["report"]
    rows = [n // 8 for n in sizes]  # the reduction kernel's blocks (XBLOCK 1)
    unbounded = sum((8 + (1 + 2 * 2 * blocks) * 8) * 8 for blocks in set(rows))
    print(f"torch {torch.__version__}: {args.grids} distinct grids, {report['launches_run']} launches, {seconds:.1f} s")
    print(
        f"peak pinned host memory: {report['peak_pinned'] / 2**20:.1f} MiB "
        f"(the reduction kernel's images alone, unbounded: {unbounded / 2**20:.1f} MiB)"
    )
    print(
        f"aclrtMallocHost {report['calls'].get('aclrtMallocHost', 0)}, aclrtFreeHost "
        f"{report['calls'].get('aclrtFreeHost', 0)}, hazards {len(report['hazards'])}"
    )


if __name__ == "__main__":
    main()
