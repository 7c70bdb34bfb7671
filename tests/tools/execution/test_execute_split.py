"""`codegen --execute`'s launches split over forked processes leave memory as Triton's interpreter leaves it, bit for
bit: a 1-D and a 2-D grid, a kernel updating its input in place, programs racing on one element (run again in one
process), a program failing in the second share (the same error) and atomics in a device function (never split)."""

# A fresh interpreter, since Triton decides at decoration time whether a function is interpreted. The grids are
# large enough to be split (execute_split.MIN_PROGRAMS), in two shares however busy the machine is.

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_speed import SPEED_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
from npu_inductor_compat.tools.simulated.execution import execute_split
from npu_inductor_compat.tools.simulated.execution.execute_split import SPLIT_RECORD

execute_split.idle_cores = lambda: 1  # two shares whatever else runs (the other pytest-xdist worker)

B = 16

@triton.jit
def rows(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + i, i < n)
    tl.store(y_ptr + i, x * 3 + tl.num_programs(0), i < n)

@triton.jit
def tiles(x_ptr, y_ptr, B: tl.constexpr):  # grid (1, P, 2): the split axis is y, z keeps its whole range
    r = tl.program_id(1) * B + tl.arange(0, B)[:, None]
    c = tl.program_id(2) * B + tl.arange(0, B)[None, :]
    x = tl.load(x_ptr + r * 2 * B + c)
    tl.store(y_ptr + c * tl.num_programs(1) * B + r, x - tl.program_id(2))

@triton.jit
def in_place(x_ptr, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(x_ptr + i, tl.load(x_ptr + i) * 0.5)

@triton.jit
def racing(y_ptr, B: tl.constexpr):  # every program writes element 0: the sequential loop keeps the last
    i = tl.arange(0, B)
    tl.store(y_ptr + i, (tl.program_id(0) + i).to(tl.float32), i == 0)

@triton.jit
def stray(x_ptr, y_ptr, n, B: tl.constexpr):  # the last program reads past x
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + i, tl.load(x_ptr + i + (tl.program_id(0) == tl.num_programs(0) - 1) * B))

@triton.jit
def bump(ptrs, values):
    tl.atomic_add(ptrs, values)

@triton.jit
def summed(x_ptr, y_ptr, B: tl.constexpr):  # its atomics are in a device function it calls
    i = tl.program_id(0) * B + tl.arange(0, B)
    bump(y_ptr + (i % 3), tl.load(x_ptr + i))

P = 96
torch.manual_seed(0)
x = torch.randn(P * B)
square = torch.randn(P * B, 2 * B)

def launches():
    y, t, z, r, s = torch.zeros(P * B), torch.zeros(2 * B * P * B), x.clone(), torch.zeros(B), torch.zeros(3)
    rows[(P,)](x, y, P * B - 5, B)
    tiles[(1, P, 2)](square, t, B)
    in_place[(P,)](z, B)
    racing[(P,)](r, B)
    summed[(P,)](x, s, B)
    try:
        stray[(P,)](x, torch.zeros(P * B), P * B, B)
        error = None
    except Exception as err:
        error = str(err)
    return [v.view(torch.int32).tolist() for v in (y, t, z, r, s)], error

results, counts = {}, {}
for name, records in (("one", []), ("split", [SPLIT_RECORD])):
    journal = Journal()
    journal.apply([INTERPRETER_RECORD, SPEED_RECORD, *records, BOUNDS_RECORD])
    execute_split.COUNTS.update({"split": 0, "ran again": 0})
    results[name] = launches()
    counts[name] = dict(execute_split.COUNTS)
    journal.undo()
names = ["rows", "tiles", "in_place", "racing", "summed"]
same = {n: a == b for n, a, b in zip(names, results["one"][0], results["split"][0])}
print(json.dumps({"same": same, "errors": [results["one"][1], results["split"][1]], "counts": counts["split"]}))
"""


def test_a_split_launch_leaves_what_the_sequential_loop_leaves(tmp_path: Path) -> None:
    """Five launches split (rows, tiles, in place, the racing one, the failing one: every program but the last
    succeeds, so its share's process fails), the racing and the failing one run again in one process; the atomic
    one never splits. Every result and the error's text as without the record. The kernels are in a file: the
    split reads a kernel's source (for atomics), as Triton's interpreter does to rewrite it."""
    script = tmp_path / "split_launches.py"
    script.write_text(SCRIPT)
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(found["same"].values()), found
    one, split = found["errors"]
    assert one is not None and "outside every tensor" in one and split == one, found
    assert found["counts"] == {"split": 3, "ran again": 2}, found
