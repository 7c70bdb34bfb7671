"""Triton helpers imported by NPU kernels that torch-npu-looped-argreduce-index rewrote (never by this package):
argmax/argmin of a block as two single-operand reductions, for triton-ascend."""

# Importing this module imports triton: only kernel modules import it, in the process that compiles them.
# Triton reads the parameters' annotations (tl.constexpr) itself, so the others stay unannotated for mypy:
# mypy: disable-error-code="no-untyped-def,untyped-decorator"

import triton
import triton.language as tl


# torch's max_with_index/min_with_index (torch/_inductor/runtime/triton_helpers.py) reduce (value, index) in one
# two-operand tl.reduce. Given the loop-carried accumulators of a looped reduction, triton-ascend's lowering of that
# reduce returns the lane position instead of the carried index (torch_npu fixed it on v2.10.0 and master by
# reducing twice). Here: the extremum first, with a combine that keeps one of its inputs (so it equals some lane
# exactly, and NaN wins, as torch's argmax/argmin rank it), then the least index whose value is that extremum.
@triton.jit
def _larger(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _smaller(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _first_index_reaching(value, index, extremum, dim: tl.constexpr):
    """The least ``index`` along ``dim`` whose ``value`` is ``extremum`` (a NaN extremum matches NaN lanes)."""
    kept = tl.expand_dims(extremum, dim)
    reached = (value == kept) | ((value != value) & (kept != kept))
    beyond = tl.expand_dims(tl.max(index, dim), dim)  # no reaching lane's index is larger
    return tl.min(tl.where(reached, index, beyond), dim)


@triton.jit
def max_with_index(value, index, dim: tl.constexpr):
    """torch's max_with_index(value, index, dim): the maximum along ``dim`` and the least index reaching it."""
    peak = tl.reduce(value, dim, _larger)
    return peak, _first_index_reaching(value, index, peak, dim)


@triton.jit
def min_with_index(value, index, dim: tl.constexpr):
    """torch's min_with_index(value, index, dim): the minimum along ``dim`` and the least index reaching it."""
    trough = tl.reduce(value, dim, _smaller)
    return trough, _first_index_reaching(value, index, trough, dim)
