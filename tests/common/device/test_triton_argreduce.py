"""The argmax/argmin helpers NPU kernels call under torch-npu-looped-argreduce-index (common/triton_argreduce.py), and
the rewrite that makes torch_npu's kernels call them (common/fixes/torch_npu_backports.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from npu_inductor_compat.common.fixes.torch_npu_backports import argreduce_in_two_steps

# The end of a looped argmax/argmin as torch_npu 2.9.1 writes it (its codegen/triton.py final_argreduce), after the
# header its kernels import triton_helpers with.
KERNEL = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers
@triton.jit
def kernel(out_ptr0, X0BLOCK_SUB: tl.constexpr):
    _tmp2_next, _tmp2_index_next = triton_helpers.maximum_with_index(_tmp2, _tmp2_index, tmp1, rindex)
    _, tmp2_tmp = triton_helpers.max_with_index(_tmp2, _tmp2_index, 1)
    _, tmp3_tmp = triton_helpers.min_with_index(_tmp3, _tmp3_index, 1)
"""


def test_a_kernels_argreduce_calls_go_to_the_two_step_helpers_it_imports() -> None:
    rewritten = argreduce_in_two_steps(KERNEL)
    lines = rewritten.splitlines()
    assert lines[lines.index("import triton.language as tl") + 1] == (
        "from npu_inductor_compat.common import triton_argreduce"
    )
    assert "triton_argreduce.max_with_index(_tmp2, _tmp2_index, 1)" in rewritten
    assert "triton_argreduce.min_with_index(_tmp3, _tmp3_index, 1)" in rewritten
    assert "triton_helpers.max_with_index" not in rewritten and "triton_helpers.min_with_index" not in rewritten
    # the loop's element-wise combine stays torch's; a second pass changes nothing
    assert "triton_helpers.maximum_with_index(_tmp2, _tmp2_index, tmp1, rindex)" in rewritten
    assert argreduce_in_two_steps(rewritten) == rewritten


def test_a_kernel_without_argreduce_is_left_as_it_is() -> None:
    plain = KERNEL.replace("max_with_index(", "maximum(").replace("min_with_index(", "minimum(")
    assert argreduce_in_two_steps(plain) == plain


def test_a_kernel_without_the_triton_language_import_gets_the_helpers_first() -> None:
    body = "_, tmp0 = triton_helpers.max_with_index(a, b, 0)\n"
    assert argreduce_in_two_steps(body) == (
        "from npu_inductor_compat.common import triton_argreduce\n_, tmp0 = triton_argreduce.max_with_index(a, b, 0)\n"
    )


# The helpers run in Triton's interpreter (TRITON_INTERPRET=1: the real triton.language on CPU tensors; the same
# functions triton-ascend lowers on an NPU host) against torch's own argmax/argmin: ties, NaN, integers, 1-D and 2-D.
INTERPRETED = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from npu_inductor_compat.common import triton_argreduce as helpers

@triton.jit
def by_rows(x_ptr, peak, peak_at, trough, trough_at, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)
    offsets = rows[:, None] * COLS + tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + offsets)
    index = (offsets % COLS).to(tl.int64)
    high, high_at = helpers.max_with_index(x, index, 1)
    low, low_at = helpers.min_with_index(x, index, 1)
    tl.store(peak + rows, high)
    tl.store(peak_at + rows, high_at)
    tl.store(trough + rows, low)
    tl.store(trough_at + rows, low_at)

@triton.jit
def flat(x_ptr, out_ptr, COLS: tl.constexpr):
    columns = tl.arange(0, COLS)
    x = tl.load(x_ptr + columns)
    _, high_at = helpers.max_with_index(x, columns.to(tl.int64), 0)
    _, low_at = helpers.min_with_index(x, columns.to(tl.int64), 0)
    tl.store(out_ptr, high_at)
    tl.store(out_ptr + 1, low_at)

nan = float("nan")
cases = {
    "floats": torch.tensor([[1.0, 3.0, 3.0, 0.0], [nan, 2.0, nan, -1.0], [5.0, 5.0, 5.0, 5.0], [-2.0, -7.0, -2.0, -7]]),
    "ints": torch.tensor([[3, 9, 9, 1], [4, 4, 0, 0], [1, 2, 3, 4], [7, 7, 7, 7]], dtype=torch.int32),
}
found = {}
for name, x in cases.items():
    values = [torch.empty(4, dtype=x.dtype), torch.empty(4, dtype=torch.int64)]
    lows = [torch.empty(4, dtype=x.dtype), torch.empty(4, dtype=torch.int64)]
    by_rows[(1,)](x, *values, *lows, ROWS=4, COLS=4)
    found[name] = {
        "argmax": [values[1].tolist(), x.argmax(1).tolist()],
        "argmin": [lows[1].tolist(), x.argmin(1).tolist()],
        "max": [values[0].tolist(), x.amax(1).tolist()],
        "min": [lows[0].tolist(), x.amin(1).tolist()],
    }
line = torch.tensor([2.0, 8.0, 1.0, 8.0, 1.0, 0.0, 0.0, 5.0])
out = torch.empty(2, dtype=torch.int64)
flat[(1,)](line, out, COLS=8)
found["1-D"] = {"argmax, argmin": [out.tolist(), [line.argmax().item(), line.argmin().item()]]}
print(json.dumps(found))
"""


@pytest.mark.subprocess
def test_the_helpers_give_torchs_argmax_and_argmin_in_tritons_interpreter(run_python: Any) -> None:
    """Ties resolve to the first index and NaN ranks above every number, as torch's argmax/argmin do; the extremum
    returned is the lane's own value."""
    done = run_python(INTERPRETED, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for case, results in found.items():
        for what, (got, expected) in results.items():
            if what in ("max", "min"):  # NaN != NaN: compare as text
                got, expected = str(got), str(expected)
            assert got == expected, (case, what, got, expected)
