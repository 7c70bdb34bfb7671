"""`codegen --execute`'s replay gives Triton's interpreter's bits: each kernel below runs with every program in the
interpreter and with its later programs replayed; a program whose Python reads other values than the first's (a
branch on the program id), or a kernel whose Python reads memory, runs in the interpreter."""

# A fresh interpreter, since Triton decides at decoration time whether a function is interpreted. Each kernel's
# later programs differ from its first in what they load, store or branch on.

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = r"""
import json, os, sys, traceback
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_replay import COUNTS, REASONS, REPLAY_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_speed import SPEED_RECORD


@triton.jit
def tiled_copy(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK: tl.constexpr, XBLOCK: tl.constexpr):
    # Inductor's weight to channels last: a 2-D tile a program, masked at both edges (the load's `other` is read by
    # Python: triton.language tests its truth, a constant's, the same in every program)
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    y0 = yindex % 6
    y1 = yindex // 6
    tmp0 = tl.load(in_ptr0 + (xindex + 5 * yindex), xmask & ymask, eviction_policy="evict_last", other=float("-inf"))
    tl.store(out_ptr0 + (y0 + 6 * xindex + 30 * y1), tmp0 * 2.0 + 1.0, xmask & ymask)


@triton.jit
def row_statistics(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # a looped reduction over a row length given at run time, then Inductor's generic reductions on the last block
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    acc = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        x = tl.load(in_ptr0 + (rindex + rnumel * xindex), rmask & xmask, other=0.0)
        acc = acc + tl.where(rmask & xmask, x, 0.0)
    total = tl.sum(acc, 1)[:, None]
    peak = triton_helpers.max2(x, 1)[:, None]
    zero, one = tl.zeros([XBLOCK, RBLOCK], tl.float32), tl.full([XBLOCK, RBLOCK], 1.0, tl.float32)
    mean, m2, weight = triton_helpers.welford(x, zero, one, 1)
    value, where = triton_helpers.max_with_index(x, rindex + tl.zeros([XBLOCK, RBLOCK], tl.int32), 1)
    tl.store(out_ptr0 + 5 * xindex, total, xmask)
    tl.store(out_ptr0 + 5 * xindex + 1, peak, xmask)
    tl.store(out_ptr0 + 5 * xindex + 2, mean[:, None], xmask)
    tl.store(out_ptr0 + 5 * xindex + 3, m2[:, None], xmask)
    tl.store(out_ptr0 + 5 * xindex + 4, where[:, None].to(tl.float32), xmask)


@triton.jit
def counted(in_ptr0, out_ptr0, count_ptr, BLOCK: tl.constexpr):
    # every program adds into one counter: replayed in the loop's order
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(in_ptr0 + offsets)
    tl.atomic_add(count_ptr + tl.zeros([BLOCK], tl.int32), (x > 0).to(tl.int32))
    tl.store(out_ptr0 + offsets, tl.cumsum(x, 0))


@triton.jit
def branching(in_ptr0, out_ptr0, BLOCK: tl.constexpr):
    # the first program takes the branch the others do not: its calls cannot stand for theirs. The sum before it
    # calls a device function of triton.language.standard, at whose call Triton 3.3-3.6 patch tensor methods again
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(in_ptr0 + offsets) + tl.sum(tl.full([BLOCK], 0.0, tl.float32), 0)
    if pid < 1:
        tl.store(out_ptr0 + offsets, x * 3.0)
    else:
        tl.store(out_ptr0 + offsets, x - 1.0)


@triton.jit
def looping(in_ptr0, count_ptr, out_ptr0, BLOCK: tl.constexpr):
    # a loop as long as a count each program loads: nothing but memory says which steps a program makes
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(in_ptr0 + offsets)
    for _ in range(tl.load(count_ptr + pid)):
        acc = acc * 1.5
    tl.store(out_ptr0 + offsets, acc)


@triton.jit
def overrunning(in_ptr0, out_ptr0, BLOCK: tl.constexpr):
    # no mask: the last program stores past the end of out_ptr0
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr0 + offsets, tl.load(in_ptr0 + offsets) + 1.0)


@triton.jit
def sub_blocked(in_ptr0, out_ptr0, xnumel, XBLOCK, XBLOCK_SUB: tl.constexpr):
    # torch_npu's form: a Python min of the program's end and the numel (a run-time argument) bounds its mask, so
    # the last program reads another value there than the first and runs in the interpreter; the rest are replayed
    xoffset = tl.program_id(0) * XBLOCK
    base = tl.arange(0, XBLOCK_SUB)
    for loop in range((XBLOCK + XBLOCK_SUB - 1) // XBLOCK_SUB):
        x0 = xoffset + loop * XBLOCK_SUB + base
        xmask = x0 < min(XBLOCK + xoffset, xnumel)
        tl.store(out_ptr0 + x0, tl.load(in_ptr0 + x0, xmask) * 0.5, xmask)


def launches():
    torch.manual_seed(0)
    data = torch.randn(4096)
    data[torch.rand(4096) < 0.05] = float("nan")
    yield "tiled_copy", lambda out: tiled_copy[(2, 5, 1)](data[:150].clone(), out, 30, 5, YBLOCK=8, XBLOCK=4), 150
    rows = data[:11 * 37].clone()
    yield "row_statistics", lambda out: row_statistics[(3,)](rows, out, 11, 37, XBLOCK=4, RBLOCK=8), 55
    def count(out):
        counter = torch.zeros(1, dtype=torch.int32)
        counted[(6,)](data[:96].clone(), out, counter, BLOCK=16)
        out[0] += counter[0].item()
    yield "counted", count, 96
    yield "sub_blocked", lambda out: sub_blocked[(5,)](data[:70].clone(), out, 70, 16, XBLOCK_SUB=8), 70
    yield "branching", lambda out: branching[(4,)](data[:64].clone(), out, BLOCK=16), 64
    counts = torch.tensor([0, 3, 1, 2], dtype=torch.int32)
    yield "looping", lambda out: looping[(4,)](data[:64].clone(), counts, out, BLOCK=16), 64
    yield "overrunning", lambda out: overrunning[(4,)](data[:64].clone(), out, BLOCK=16), 60


found = {}
for name, launch, size in launches():
    runs = {}
    for mode, records in (("triton", []), ("replay", [REPLAY_RECORD])):
        journal = Journal()
        journal.apply([INTERPRETER_RECORD, SPEED_RECORD, *records, BOUNDS_RECORD])
        before, reasons = dict(COUNTS), dict(REASONS)
        out = torch.full((size,), 7.0)
        error = None
        try:
            launch(out)
        except Exception as err:
            error = {"message": str(err), "traceback": traceback.format_exc()}
        finally:
            journal.undo()
        counts = {key: COUNTS[key] - before[key] for key in COUNTS}
        why = sorted(reason for reason in REASONS if REASONS[reason] != reasons.get(reason, 0))
        runs[mode] = {"bits": out.view(torch.int32).tolist(), "counts": counts, "error": error, "why": why}
    found[name] = {
        "same_bits": runs["triton"]["bits"] == runs["replay"]["bits"],
        "nan": bool(torch.tensor(runs["replay"]["bits"], dtype=torch.int32).view(torch.float32).isnan().any()),
        "counts": runs["replay"]["counts"],
        "why": runs["replay"]["why"],
        "errors": [runs["triton"]["error"], runs["replay"]["error"]],
    }
print(json.dumps(found))
"""


_FOUND: list[dict[str, Any]] = []  # the script's result, run once for the module's tests


@pytest.fixture
def replayed(last_json_of: Any) -> dict[str, Any]:
    if not _FOUND:
        _FOUND.append(last_json_of(SCRIPT, ""))
    return _FOUND[0]


def test_inductors_pointwise_and_reduction_kernels_are_replayed_with_the_interpreters_bits(
    replayed: dict[str, Any],
) -> None:
    """A tiled copy, a looped reduction over a run-time length with Inductor's sum, max, Welford and max with index,
    and a kernel of atomics and a scan: every program after the first replayed, the same bits as Triton's loop."""
    for name in ("tiled_copy", "row_statistics", "counted"):
        found = replayed[name]
        assert found["same_bits"] and found["errors"] == [None, None], (name, found)
        assert found["counts"] == {"replayed": 1, "interpreted": 0, "programs interpreted": 0}, (name, found)
    assert replayed["row_statistics"]["nan"], "the data's NaNs never reached the reductions"


def test_a_program_whose_python_reads_other_values_than_the_first_runs_in_the_interpreter(
    replayed: dict[str, Any],
) -> None:
    """Python reading values computed from the program id (torch_npu's ``min`` of a program's end and the numel, a
    branch on the id): the programs that read what the first read are replayed, the others interpreted, and the
    bits are Triton's (a replay of the first program alone would store x * 3 everywhere in ``branching``)."""
    expected = {"sub_blocked": 1, "branching": 3}  # the last of five programs; all but the first of four
    for name, interpreted in expected.items():
        found = replayed[name]
        assert found["same_bits"] and found["errors"] == [None, None], (name, found)
        assert found["counts"] == {"replayed": 1, "interpreted": 0, "programs interpreted": interpreted}, found


def test_a_kernel_whose_python_flow_reads_memory_is_interpreted(replayed: dict[str, Any]) -> None:
    """A loop as long as a count each program loads: no later program can be checked before it runs, so the
    interpreter runs every program, with Triton's bits."""
    found = replayed["looping"]
    assert found["same_bits"] and found["errors"] == [None, None], found
    assert found["counts"] == {"replayed": 0, "interpreted": 1, "programs interpreted": 0}, found
    assert found["why"] == ["the kernel's Python read a value loaded from memory (an if, range, min or print on it)"]


def test_a_replayed_program_that_fails_fails_as_the_interpreter_does_with_the_kernels_line(
    replayed: dict[str, Any],
) -> None:
    """The last program stores past its tensor: the same error as Triton's loop gives, and the traceback of that
    program run again in the interpreter, which goes through the kernel's frame."""
    triton_error, replay_error = replayed["overrunning"]["errors"]
    assert triton_error is not None and replay_error is not None, replayed["overrunning"]
    assert replay_error["message"] == triton_error["message"] and "outside every tensor" in replay_error["message"]
    assert replayed["overrunning"]["counts"]["replayed"] == 1, replayed["overrunning"]
    assert ", in overrunning" in replay_error["traceback"], replay_error["traceback"]
