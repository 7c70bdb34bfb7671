"""`codegen --execute` in Triton's interpreter: an access outside the launch's tensors is the kernel's error (the
memory record), and torch_npu's tl.max(..., propagate_nan=True) runs as triton-ascend's, NaN winning."""

# The kernels are written here in the form the wrong code takes: torch_npu's index kernel for a slice_scatter over
# dynamic sizes loads the shorter tensor without the mask `x0 < its size` (torch-npu-masked-load-size-symbols) and
# discards those lanes with tl.where, so the values come out right. They run in a fresh interpreter (Triton decides
# at decoration time whether a function is interpreted), with and without the records.

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

SCRIPT = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import INTERPRETER_RECORD

@triton.jit
def prefix_scatter(in_ptr0, in_ptr1, out_ptr0, ks0, xnumel, XBLOCK: tl.constexpr, GUARDED: tl.constexpr):
    x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = x0 < xnumel
    inside = x0 < ks0
    if GUARDED:
        short = tl.load(in_ptr1 + x0, xmask & inside, other=0.0)
    else:
        short = tl.load(in_ptr1 + x0, xmask, other=0.0)
    base = tl.load(in_ptr0 + x0, xmask)
    tl.store(out_ptr0 + x0, tl.where(inside, short * 2.0, base) + 1.0, xmask)

@triton.jit
def store_rows(out_ptr0, xnumel, XBLOCK: tl.constexpr):
    x0 = tl.arange(0, XBLOCK)
    tl.store(out_ptr0 + x0, x0.to(tl.float32), x0 < xnumel)

@triton.jit
def count_into(out_ptr0, XBLOCK: tl.constexpr):
    x0 = tl.arange(0, XBLOCK)
    tl.atomic_add(out_ptr0 + x0, 1.0, x0 < XBLOCK)

@triton.jit
def row_max(in_ptr0, out_ptr0, RBLOCK: tl.constexpr):
    rows = tl.load(in_ptr0 + (tl.arange(0, 2)[:, None] * RBLOCK + tl.arange(0, RBLOCK)[None, :]))
    tl.store(out_ptr0 + tl.arange(0, 2), tl.max(rows, 1, propagate_nan=True))

def attempt(run):
    try:
        return run()
    except Exception as err:
        return f"{type(err).__name__}: {err}"

journal = Journal()
journal.apply([{"both": INTERPRETER_RECORD, "bounds": BOUNDS_RECORD}[name] for name in sys.argv[1].split(",") if name])
base, prefix = torch.randn(256), torch.randn(200)
expected = torch.slice_scatter(base, prefix * 2.0, 0, 0, 200) + 1.0
results = {}
for guarded in (True, False):
    out = torch.full((256,), float("nan"))
    error = attempt(lambda: prefix_scatter[(8,)](base, prefix, out, 200, 256, XBLOCK=32, GUARDED=guarded))
    results["guarded" if guarded else "dropped"] = {"error": error, "right": torch.equal(out, expected)}
if "bounds" in sys.argv[1]:  # unchecked, these write past the tensor into the host's heap
    storage = torch.zeros(16)
    results["view"] = attempt(lambda: store_rows[(1,)](storage[:4], 8, XBLOCK=8)) or storage[:8].tolist()
    results["store"] = attempt(lambda: store_rows[(1,)](torch.zeros(4), 8, XBLOCK=8))
    results["atomic"] = attempt(lambda: count_into[(1,)](torch.zeros(6), XBLOCK=8))
rows = torch.tensor([[1.0, float("nan"), 3.0, 2.0], [4.0, 0.0, -1.0, 2.0]])
found = torch.zeros(2)
results["max"] = attempt(lambda: row_max[(1,)](rows, found, RBLOCK=4)) or str(found.tolist())
print(json.dumps(results))
journal.undo()
"""


@pytest.mark.subprocess
def test_the_records_make_a_dropped_mask_an_error_naming_the_tensor_and_max_propagate_nan(last_json_of: Any) -> None:
    """With both records: the guarded load runs right; the load without its mask, whose values tl.where discards,
    is an error naming in_ptr1 and its first element past the end; a store or atomic past the end too; a store past
    a view but inside its storage is allowed (on the device that memory is the tensor's allocation); tl.max with
    propagate_nan gives NaN for the row holding one."""
    results = last_json_of(SCRIPT, "both,bounds")
    assert results["guarded"] == {"error": None, "right": True}, results
    dropped = results["dropped"]
    assert isinstance(dropped, dict) and not dropped["right"], results
    assert "OutOfBounds" in dropped["error"] and "a load of 24 of 32 active element(s)" in dropped["error"], dropped
    assert "the first is element 200 of in_ptr1, which holds 200" in dropped["error"], dropped
    assert results["view"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], results
    assert "a store of 4 of 8" in str(results["store"]) and "element 4 of out_ptr0" in str(results["store"]), results
    assert "an atomic update of 2 of 8" in str(results["atomic"]), results
    assert results["max"] == "[nan, 4.0]", results


@pytest.mark.subprocess
def test_without_them_the_interpreter_computes_through_the_dropped_mask_and_refuses_propagate_nan(
    last_json_of: Any,
) -> None:
    """The reason for both records: Triton's interpreter reads host memory past the tensor and, the lanes discarded,
    gives the right values (a store past the end, unchecked, corrupts the host's heap: not tried); Triton's own
    tl.max has no propagate_nan."""
    results = last_json_of(SCRIPT, "")
    assert results["dropped"] == {"error": None, "right": True}, results
    assert "propagate_nan" in str(results["max"]), results


def test_an_active_lane_outside_every_region_is_named_and_masked_lanes_are_not_checked() -> None:
    """The check itself on handles as the interpreter builds them (addresses as uint64, one mask per lane)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    from npu_inductor_compat.tools.simulated.execution import execute_bounds as bounds

    regions = [bounds.Region("in_ptr0", 1000, 1016), bounds.Region("out_ptr0", 2000, 2008)]
    pointers = TensorHandle(np.array([1000, 1004, 1012, 1016, 2004], dtype=np.uint64), tl.pointer_type(tl.float32))
    saved = list(bounds._REGIONS)
    bounds._REGIONS[:] = regions
    try:
        bounds.outside(pointers, TensorHandle(np.array([1, 1, 1, 0, 1], dtype=bool), tl.int1), "a load")
        with pytest.raises(bounds.OutOfBounds, match=r"a load of 1 of 5 .* element 4 of in_ptr0, which holds 4"):
            bounds.outside(pointers, None, "a load")
        wide = TensorHandle(np.array([2004], dtype=np.uint64), tl.pointer_type(tl.float64))
        with pytest.raises(bounds.OutOfBounds, match=r"element 0 of out_ptr0, which holds 1"):
            bounds.outside(wide, None, "a store")  # 8 bytes from 2004 end past 2008
        before = TensorHandle(np.array([996], dtype=np.uint64), tl.pointer_type(tl.float32))
        with pytest.raises(bounds.OutOfBounds, match=r"element -1 of in_ptr0"):
            bounds.outside(before, None, "a load")
    finally:
        bounds._REGIONS[:] = saved
