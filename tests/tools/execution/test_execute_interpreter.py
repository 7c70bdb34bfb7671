"""Triton's interpreter as `codegen --execute` runs it: an atomic add under a broadcast mask (what Inductor emits for
an embedding backward fused into a persistent reduction) adds every column, with the record; without it, one. An
index assert under an inverted mask (torch 2.7.1's) runs."""

# A fresh interpreter, since Triton decides at decoration time whether a function is interpreted. The kernel has
# the shape of GPT-2's fused embedding backward (found there), at its config XBLOCK=1: values [1, R0_BLOCK] added
# at rows named by an index, under the row mask xmask of shape [XBLOCK, 1], which Triton's semantic broadcasts.

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD

@triton.jit
def scatter_rows(out_ptr, index_ptr, value_ptr, xnumel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0 = tl.arange(0, R0_BLOCK)[None, :]
    rows = tl.load(index_ptr + xindex, xmask)
    values = tl.load(value_ptr + (r0 + R0_BLOCK * xindex), xmask)
    tl.atomic_add(out_ptr + tl.broadcast_to(r0 + R0_BLOCK * rows, [XBLOCK, R0_BLOCK]), values, xmask, sem="relaxed")

journal = Journal()
if sys.argv[1] == "with":
    journal.apply([INTERPRETER_RECORD])
index = torch.tensor([3, 1, 3, 0, 2])
values = torch.arange(5 * 8, dtype=torch.float32).reshape(5, 8)
out = torch.zeros(4, 8)
scatter_rows[(5,)](out, index, values, 5, XBLOCK=1, R0_BLOCK=8)
expected = torch.zeros(4, 8).index_put_((index,), values, accumulate=True)
print(json.dumps({"right": torch.equal(out, expected), "columns": int((out != 0).any(0).sum())}))
journal.undo()
"""


def test_with_the_record_an_atomic_add_under_a_broadcast_mask_adds_every_column(last_json_of: Any) -> None:
    assert last_json_of(SCRIPT, "with") == {"right": True, "columns": 8}


@pytest.mark.upstream_limit
def test_without_it_the_interpreter_adds_only_the_first_column(last_json_of: Any) -> None:
    """Triton's interpreter (3.3 to 3.8) passes the broadcast mask to its C++ atomic_rmw as a strided view; 3.9's
    adds every column, so there the record changes nothing."""
    from importlib.metadata import version

    from packaging.version import Version

    if Version(version("triton")) >= Version("3.9"):
        assert last_json_of(SCRIPT, "without") == {"right": True, "columns": 8}
    else:
        assert last_json_of(SCRIPT, "without") == {"right": False, "columns": 1}


INVERTED_MASK = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD

@triton.jit
def gather(in_ptr, table_ptr, out_ptr, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    index = tl.load(in_ptr + xindex, xmask)
    tl.device_assert(((0 <= index) & (index < 8)) | ~(xmask), "index out of bounds: 0 <= index < 8")
    tl.store(out_ptr + xindex, tl.load(table_ptr + index, xmask), xmask)

journal = Journal()
journal.apply([INTERPRETER_RECORD])
index, table, out = torch.tensor([3, 1, 7, 0, 2]), torch.arange(8) * 10, torch.zeros(5, dtype=torch.int64)
gather[(2,)](index, table, out, 5, XBLOCK=4)
print(json.dumps({"right": torch.equal(out, table[index])}))
journal.undo()
"""


def test_an_index_assert_under_an_inverted_mask_runs_as_torch_2_7_1_emits_it(last_json_of: Any) -> None:
    """Inductor's index kernels on torch 2.7.1 assert `... | ~(xmask)`: Triton 3.3's interpreter could not invert a
    boolean (every gather or embedding kernel of BERT was an interpreter error); with the record it runs, on every
    line."""
    assert last_json_of(INVERTED_MASK, "with") == {"right": True}


ONE_TUPLE_SCAN = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD

@triton.jit
def add(a, b):
    return a + b

@triton.jit
def cumulative(in_ptr, out_ptr, R: tl.constexpr):
    rows = tl.arange(0, R)[None, :]
    values = tl.load(in_ptr + rows)
    total, = tl.associative_scan((values,), 1, add)  # torch 2.7.1's cumsum, as Inductor writes it
    tl.store(out_ptr + rows, total)

journal = Journal()
if sys.argv[1] == "with":
    journal.apply([INTERPRETER_RECORD])
torch.manual_seed(0)  # unseeded, a partial sum near zero now and then left allclose's relative tolerance
values, out = torch.randn(16), torch.zeros(16)
try:
    cumulative[(1,)](values, out, R=16)
    print(json.dumps({"right": torch.allclose(out, values.cumsum(0)), "error": None}))
except Exception as err:
    print(json.dumps({"right": False, "error": str(err)[:200]}))
journal.undo()
"""


def test_a_one_tuple_scan_unpacks_as_inductor_writes_it(last_json_of: Any) -> None:
    """torch 2.7.1's cumsum with a combine function of its own unpacks a one-tuple scan; Triton 3.3's interpreter
    returned the tensor bare (examples/corpus/norms_and_scans.py was an interpreter error, stock 2.7.1). With the
    record it runs on every line; without it, only Triton 3.4 on."""
    from importlib.metadata import version

    from packaging.version import Version

    assert last_json_of(ONE_TUPLE_SCAN, "with") == {"right": True, "error": None}
    without = last_json_of(ONE_TUPLE_SCAN, "without")
    if Version(version("triton")) >= Version("3.4"):
        assert without == {"right": True, "error": None}
    else:
        assert not without["right"] and "not iterable" in without["error"], without
