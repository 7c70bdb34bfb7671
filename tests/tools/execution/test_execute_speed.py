"""`codegen --execute`'s faster interpreter computes what Triton's own computes, bit for bit: Inductor's generic
reductions (NaN-propagating max and min, Welford, max with index, any, product) over rows, columns and the whole
block, with kept dimensions, in a kernel run by Triton's interpreter with the speed record and without it."""

# A fresh interpreter, since Triton decides at decoration time whether a function is interpreted. The data holds
# NaNs, signed zeros and ties, where the order of a fold shows.

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD
from npu_inductor_compat.tools.simulated.execution import execute_speed
from npu_inductor_compat.tools.simulated.execution.execute_speed import SPEED_RECORD

R, C = 8, 16

@triton.jit
def reductions(x_ptr, i_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    index = tl.load(i_ptr + rows * C + cols)
    tl.store(out_ptr + tl.arange(0, R), triton_helpers.max2(x, 1))
    tl.store(out_ptr + R + tl.arange(0, C), triton_helpers.min2(x, 0))
    mean, m2, weight = triton_helpers.welford(x, tl.zeros([R, C], tl.float32), tl.full([R, C], 1.0, tl.float32), 1)
    tl.store(out_ptr + R + C + tl.arange(0, R), mean)
    tl.store(out_ptr + 2 * R + C + tl.arange(0, R), m2)
    value, where = triton_helpers.max_with_index(x, index, 0)
    tl.store(out_ptr + 3 * R + C + tl.arange(0, C), value)
    tl.store(out_ptr + 3 * R + 2 * C + tl.arange(0, C), where.to(tl.float32))
    tl.store(out_ptr + 3 * R + 3 * C + tl.arange(0, R), triton_helpers.any(x > 0.5, 1).to(tl.float32))
    tl.store(out_ptr + 4 * R + 3 * C + tl.arange(0, R), triton_helpers.prod(x, 1))
    kept = tl.reduce(x, 1, triton_helpers.maximum, keep_dims=True)
    tl.store(out_ptr + 5 * R + 3 * C + rows, kept)
    tl.store(out_ptr + 6 * R + 3 * C, tl.reduce(x, None, triton_helpers.minimum))
    tl.store(out_ptr + 6 * R + 3 * C + 1 + tl.arange(0, 1), tl.reduce(x, None, triton_helpers.maximum, keep_dims=True))

torch.manual_seed(0)
x = torch.randn(R, C)
x[torch.rand(R, C) < 0.1] = float("nan")
x[0, :4] = torch.tensor([0.0, -0.0, 0.0, -0.0])
x[1, :] = 1.5  # a row of ties
x[2, 3] = x[2, 9] = 4.0
index = torch.arange(R * C, dtype=torch.int64).reshape(R, C)
results = {}
for name, records in (("triton", [INTERPRETER_RECORD]), ("speed", [INTERPRETER_RECORD, SPEED_RECORD])):
    journal = Journal()
    journal.apply(records)
    out = torch.full((6 * R + 3 * C + 2,), 7.0)
    reductions[(1,)](x, index, out, R, C)
    journal.undo()
    results[name] = out.view(torch.int32).tolist()
same = results["triton"] == results["speed"]
nan = bool(torch.tensor(results["speed"]).view(torch.float32).isnan().any())
folded = {fn.__name__: safe for fn, safe in execute_speed._BLOCK_SAFE.items()}
print(json.dumps({"same_bits": same, "nan": nan, "folded": folded}))
"""


def test_the_vectorised_fold_gives_tritons_bits_for_inductors_generic_reductions(last_json_of: Any) -> None:
    """Each combine function is folded a step at a time where it computes on a block what it does on elements, and
    element by element where it does not (``and``/``not`` on blocks: max with index)."""
    found = last_json_of(SCRIPT, "")
    assert found["same_bits"] and found["nan"], found
    folded = {"maximum": True, "minimum": True, "welford_combine": True, "_any_combine": True, "_prod_accumulate": True}
    expected = {**folded, "maximum_with_index": False}
    assert {name: found["folded"].get(name) for name in expected} == expected, found


OVERFLOW = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import dataclasses
import torch, triton
import triton.language as tl
from triton.runtime import interpreter
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_speed import SPEED_RECORD

@triton.jit
def wrapping(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, x * 3 + x - 7)

x = torch.tensor([2**30, -(2**30), 2**31 - 1, -(2**31), 5, 0, 123456789, -1], dtype=torch.int32)
found = {}
for debug in (False, True):
    for name, records in (("triton", [INTERPRETER_RECORD]), ("speed", [INTERPRETER_RECORD, SPEED_RECORD])):
        builder = interpreter.interpreter_builder
        saved = builder.options
        builder.options = dataclasses.replace(saved, debug=debug)
        journal = Journal()
        journal.apply(records)
        out = torch.zeros(8, dtype=torch.int32)
        try:
            wrapping[(1,)](x, out, 8)
            result = out.tolist()
        except Exception as err:
            result = "overflow" if "overflow detected" in str(err) else str(err)
        finally:
            journal.undo()
            builder.options = saved
        found[f"{name} debug={debug}"] = result
print(json.dumps(found))
"""


def test_without_debug_the_overflow_checks_are_skipped_and_with_it_they_still_fail(last_json_of: Any) -> None:
    """32-bit arithmetic that wraps: with the interpreter's options (debug off) Triton computes each overflow check
    and drops it; the speed record skips it, and the wrapped values are the same bits. With debug on, both fail."""
    found = last_json_of(OVERFLOW, "")
    assert found["triton debug=False"] == found["speed debug=False"], found
    assert isinstance(found["speed debug=False"], list), found
    assert found["triton debug=True"] == found["speed debug=True"] == "overflow", found
