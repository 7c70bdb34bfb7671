"""Each simulated torch_npu operator's fake (what Inductor traces) and its CPU kernel (what runs) agree on every
output's shape, dtype and strides, over dtypes, shapes, layouts, mixed input dtypes (tools/simulated/npu/npu_ops.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_inductor_compat.tools.simulated.npu import npu_ops

pytestmark = pytest.mark.once  # CPU reference kernels: nothing here depends on the torch line's Inductor

DTYPES = st.sampled_from([torch.float32, torch.bfloat16, torch.float16])
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module", autouse=True)
def ops() -> Iterator[Any]:
    library = npu_ops.register()
    yield torch.ops.npu
    library._destroy()


def laid_out(shape: tuple[int, ...], dtype: torch.dtype, transposed: bool) -> torch.Tensor:
    """A tensor of ``shape``, contiguous or (``transposed``) the transpose of a contiguous one: other strides."""
    if not transposed or len(shape) < 2:
        return torch.randn(shape).to(dtype)
    return torch.randn(*shape[:-2], shape[-1], shape[-2]).to(dtype).transpose(-1, -2)


def significant_strides(tensor: torch.Tensor) -> tuple[int, ...]:
    """The strides that address memory: those of dimensions longer than one."""
    return tuple(stride for stride, size in zip(tensor.stride(), tensor.shape, strict=True) if size > 1)


def agree(op: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """The op on real CPU tensors and on fake copies of them: each output alike in shape, dtype and strides."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    real = op(*args, **kwargs)
    with FakeTensorMode() as mode:
        faked = [mode.from_tensor(arg) if isinstance(arg, torch.Tensor) else arg for arg in (*args, *kwargs.values())]
        fake = op(*faked[: len(args)], **dict(zip(kwargs, faked[len(args) :], strict=True)))
    pairs = zip(real, fake, strict=True) if isinstance(real, tuple) else [(real, fake)]
    for index, (got, traced) in enumerate(pairs):
        if not isinstance(got, torch.Tensor):
            continue
        described = [(tuple(t.shape), t.dtype, significant_strides(t)) for t in (got, traced)]
        assert described[0] == described[1], (op, index, "real then fake", described)


@SETTINGS
@given(
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    hidden=st.sampled_from([2, 8, 16]),
    dtype=DTYPES,
    gamma_dtype=DTYPES,
    transposed=st.booleans(),
)
def test_rms_norm_and_its_backward(
    ops: Any, lead: list[int], hidden: int, dtype: torch.dtype, gamma_dtype: torch.dtype, transposed: bool
) -> None:
    x = laid_out((*lead, hidden), dtype, transposed)
    gamma = torch.randn(hidden).to(gamma_dtype)
    agree(ops.npu_rms_norm, x, gamma, 1e-6)
    _, rstd = ops.npu_rms_norm(x, gamma)
    agree(ops.npu_rms_norm_backward, torch.randn(x.shape).to(dtype), x, gamma, rstd)


@SETTINGS
@given(
    batch=st.integers(1, 2),
    heads=st.integers(1, 3),
    seq=st.integers(1, 4),
    dim=st.sampled_from([2, 4, 8]),
    dtype=DTYPES,
    table_dtype=DTYPES,
    mode=st.sampled_from(["half", "interleave"]),
    transposed=st.booleans(),
)
def test_rotary_mul_and_its_backward_with_mixed_dtypes(
    ops: Any,
    batch: int,
    heads: int,
    seq: int,
    dim: int,
    dtype: torch.dtype,
    table_dtype: torch.dtype,
    mode: str,
    transposed: bool,
) -> None:
    """torch_npu casts cos and sin (and the gradient) to x's dtype and gives every output x's dtype (op-plugin
    RotaryMulKernelNpuOpApi.cpp, RotaryMulBackwardKernelNpuOpApi.cpp): bf16 x with float32 tables is bf16."""
    x = laid_out((batch, heads, seq, dim), dtype, transposed)
    cos, sin = (torch.randn(1, 1, seq, dim).to(table_dtype) for _ in range(2))
    agree(ops.npu_rotary_mul, x, cos, sin, mode)
    assert ops.npu_rotary_mul(x, cos, sin, mode).dtype == dtype
    agree(ops.npu_rotary_mul_backward, torch.randn(x.shape).to(table_dtype), x, cos, sin, mode)


@SETTINGS
@given(
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    half=st.integers(1, 4),
    dtype=DTYPES,
    transposed=st.booleans(),
)
def test_swiglu_and_its_backward(ops: Any, lead: list[int], half: int, dtype: torch.dtype, transposed: bool) -> None:
    x = laid_out((*lead, 2 * half), dtype, transposed)
    agree(ops.npu_swiglu, x, -1)
    agree(ops.npu_swiglu_backward, torch.randn(*lead, half).to(dtype), x, -1)


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), dtype=DTYPES, transposed=st.booleans())
def test_dropout_and_its_backward(ops: Any, shape: list[int], dtype: torch.dtype, transposed: bool) -> None:
    x = laid_out(tuple(shape), dtype, transposed)
    agree(ops._npu_dropout, x, 0.25)
    _, mask = ops._npu_dropout(x, 0.25)
    agree(ops.npu_dropout_backward, torch.randn(shape).to(dtype), mask, 0.25)


@SETTINGS
@given(layout=st.sampled_from(["BSH", "SBH", "BSND", "BNSD"]), dtype=DTYPES, seq_kv=st.integers(1, 3))
def test_fusion_attention_and_its_grad(ops: Any, layout: str, dtype: torch.dtype, seq_kv: int) -> None:
    batch, heads, seq, dim = 2, 2, 3, 4
    sizes = {"B": batch, "S": seq, "N": heads, "D": dim, "H": heads * dim}
    q = torch.randn(*(sizes[axis] for axis in layout)).to(dtype)
    sizes["S"] = seq_kv
    k, v = (torch.randn(*(sizes[axis] for axis in layout)).to(dtype) for _ in range(2))
    agree(ops.npu_fusion_attention, q, k, v, heads, layout)
    out, peak, total, *_ = ops.npu_fusion_attention(q, k, v, heads, layout)
    saved = {"softmax_max": peak, "softmax_sum": total, "attention_in": out}
    agree(ops.npu_fusion_attention_grad, q, k, v, torch.ones_like(out), heads, layout, **saved)


def test_rms_norm_refuses_a_gamma_of_more_dimensions_as_torch_npu_does_real_and_fake(ops: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, gamma = torch.randn(8), torch.randn(2, 8)
    with pytest.raises(RuntimeError, match="The gamma shape should not be bigger than self shape"):
        ops.npu_rms_norm(x, gamma)
    with FakeTensorMode() as mode, pytest.raises(RuntimeError, match="should not be bigger than self shape"):
        ops.npu_rms_norm(mode.from_tensor(x), mode.from_tensor(gamma))
