"""torch_npu's fused operators on the simulated NPU (npu_ops.py), each against an independent reference: the formula
written out with torch's own operators (autograd for the gradients), or torch's scaled_dot_product_attention."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from npu_inductor_compat.tools.simulated.npu import npu_ops

pytestmark = pytest.mark.once  # CPU reference kernels: nothing here depends on the torch line's Inductor


@pytest.fixture(scope="module", autouse=True)
def ops() -> Iterator[Any]:
    library = npu_ops.register()
    yield torch.ops.npu
    library._destroy()


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> None:
    torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def leaf(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype).requires_grad_()


def grads(output: torch.Tensor, inputs: list[torch.Tensor], seed: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad(output, inputs, seed)


# ------------------------------------------------------------------------------------------------ rms_norm
def test_rms_norm_is_the_formula_with_rstd_and_its_gradients(ops: Any) -> None:
    x, gamma = leaf(2, 3, 16), leaf(16)
    y, rstd = ops.npu_rms_norm(x, gamma, 1e-5)
    expected_rstd = 1 / torch.sqrt(x.detach().pow(2).mean(-1, keepdim=True) + 1e-5)
    close(rstd, expected_rstd)
    assert rstd.shape == (2, 3, 1) and rstd.dtype == torch.float32
    reference = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * gamma
    close(y, reference)
    seed = torch.randn_like(y)
    for got, want in zip(grads(y, [x, gamma], seed), grads(reference, [x, gamma], seed), strict=True):
        close(got, want, 1e-4)


def test_rms_norm_keeps_bf16_output_and_normalises_over_gammas_dims(ops: Any) -> None:
    x, gamma = torch.randn(4, 2, 8), torch.randn(2, 8)
    y, rstd = ops.npu_rms_norm(x.bfloat16(), gamma.bfloat16())
    assert y.dtype == torch.bfloat16 and rstd.shape == (4, 1, 1)
    close(rstd.squeeze(), 1 / torch.sqrt(x.bfloat16().float().pow(2).mean((1, 2)) + 1e-6), 1e-4)


# ------------------------------------------------------------------------------------------------ rotary_mul
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


@pytest.mark.parametrize(("mode", "rotate"), [("half", rotate_half), ("interleave", rotate_interleaved)])
def test_rotary_mul_is_x_cos_plus_rotated_x_sin_with_broadcast_gradients(ops: Any, mode: str, rotate: Any) -> None:
    x, cos, sin = leaf(2, 3, 4, 8), leaf(1, 1, 4, 8), leaf(1, 1, 4, 8)
    out = ops.npu_rotary_mul(x, cos, sin, mode)
    reference = x * cos + rotate(x) * sin
    close(out, reference)
    seed = torch.randn_like(out)
    got, want = grads(out, [x, cos, sin], seed), grads(reference, [x, cos, sin], seed)
    for a, b in zip(got, want, strict=True):
        close(a, b, 1e-4)
    assert got[1].shape == cos.shape


def test_rotary_mul_refuses_an_unknown_mode_and_a_rotation_matrix_naming_them(ops: Any) -> None:
    x = torch.randn(1, 1, 2, 4)
    with pytest.raises(ValueError, match="rotary_mode 'quarter'"):
        ops.npu_rotary_mul(x, x, x, "quarter")
    with pytest.raises(NotImplementedError, match=r"npu_rotary_mul .*rotate="):
        ops.npu_rotary_mul(x, x, x, "half", torch.eye(4))


# ------------------------------------------------------------------------------------------------ swiglu
@pytest.mark.parametrize("dim", [-1, 1])
def test_swiglu_is_silu_of_the_first_half_times_the_second_with_its_gradient(ops: Any, dim: int) -> None:
    x = leaf(3, 6, 4)
    out = ops.npu_swiglu(x, dim)
    first, second = x.chunk(2, dim=dim)
    reference = first * torch.sigmoid(first) * second
    close(out, reference)
    seed = torch.randn_like(out)
    close(grads(out, [x], seed)[0], grads(reference, [x], seed)[0], 1e-4)


# ------------------------------------------------------------------------------------------------ dropout
def test_npu_dropout_packs_its_mask_in_bits_and_the_backward_applies_it(ops: Any) -> None:
    x = leaf(5, 60)  # 300 elements: the mask is rounded up to 384 elements, 48 bytes
    out, mask = ops._npu_dropout(x, 0.25)
    assert mask.dtype == torch.uint8 and mask.shape == (48,)
    bits = torch.tensor([(int(byte) >> bit) & 1 for byte in mask for bit in range(8)], dtype=torch.bool)[:300]
    kept = bits.view(5, 60)
    close(out, torch.where(kept, x / 0.75, torch.zeros_like(x)))
    assert 0.5 < kept.float().mean() < 0.95  # p = 0.25 drops about a quarter
    seed = torch.randn_like(out)
    close(grads(out, [x], seed)[0], torch.where(kept, seed / 0.75, torch.zeros_like(seed)))
    (zero,) = [ops._npu_dropout(x, 0.0)[0]]
    close(zero, x)


def test_npu_dropout_backward_refuses_a_mask_too_short_for_its_gradient(ops: Any) -> None:
    with pytest.raises(ValueError, match="mask of 8 bytes for 300 elements"):
        ops.npu_dropout_backward(torch.randn(300), torch.zeros(8, dtype=torch.uint8), 0.5)


# ------------------------------------------------------------------------------------------------ fusion attention
def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def bnsd(b: int = 2, n: int = 4, s: int = 6, d: int = 8) -> list[torch.Tensor]:
    return [leaf(b, n, s, d) for _ in range(3)]


def test_fusion_attention_masks_where_true_like_sdpa_where_false_with_its_gradients(ops: Any) -> None:
    q, k, v = bnsd()
    masked = torch.rand(2, 1, 6, 6) < 0.3
    masked[..., 0] = False  # every row attends somewhere
    out, peak, total, reserved, _seed, _offset, numels = ops.npu_fusion_attention(
        q, k, v, 4, "BNSD", atten_mask=masked, scale=0.3
    )
    reference = sdpa(q, k, v, attn_mask=~masked, scale=0.3)
    close(out, reference)
    assert peak.shape == total.shape == (2, 4, 6, 8) and peak.dtype == torch.float32
    scores = (q @ k.transpose(-1, -2) * 0.3).masked_fill(masked, -math.inf).detach()
    close(peak[..., 0], scores.amax(-1))
    close(total[..., 0], (scores - scores.amax(-1, keepdim=True)).exp().sum(-1))
    assert reserved.numel() == 0 and numels == 2 * 4 * 6 * 6
    seed = torch.randn_like(out)
    for got, want in zip(grads(out, [q, k, v], seed), grads(reference, [q, k, v], seed), strict=True):
        close(got, want, 1e-4)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND"])
def test_fusion_attention_reads_and_writes_each_layout(ops: Any, layout: str) -> None:
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))  # BNSD
    to = {
        "BSH": lambda t: t.transpose(1, 2).flatten(-2),
        "SBH": lambda t: t.permute(2, 0, 1, 3).flatten(-2),
        "BSND": lambda t: t.transpose(1, 2),
    }[layout]
    out = ops.npu_fusion_attention(to(q), to(k), to(v), 4, layout, scale=0.25)[0]
    close(out, to(sdpa(q, k, v, scale=0.25)))


@pytest.mark.parametrize(("sparse_mode", "sq", "skv"), [(2, 6, 6), (3, 4, 6)])
def test_fusion_attention_causal_sparse_modes_align_top_left_and_bottom_right(
    ops: Any, sparse_mode: int, sq: int, skv: int
) -> None:
    q, k, v = torch.randn(1, 2, sq, 8), torch.randn(1, 2, skv, 8), torch.randn(1, 2, skv, 8)
    compressed = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # what callers pass on hardware
    out = ops.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=compressed, scale=0.5, sparse_mode=sparse_mode)[0]
    allowed = torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=skv - sq if sparse_mode == 3 else 0)
    close(out, sdpa(q, k, v, attn_mask=allowed, scale=0.5))


def test_fusion_attention_groups_query_heads_over_fewer_key_value_heads_and_adds_pse(ops: Any) -> None:
    q, k, v = leaf(1, 4, 5, 8), leaf(1, 2, 5, 8), leaf(1, 2, 5, 8)
    pse = leaf(1, 4, 5, 5)
    out = ops.npu_fusion_attention(q, k, v, 4, "BNSD", pse=pse, scale=0.5)[0]
    # scale * (pse + q k^T) is sdpa's scale * q k^T plus the float mask scale * pse
    reference = sdpa(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=0.5 * pse, scale=0.5)
    close(out, reference)
    seed = torch.randn_like(out)
    for got, want in zip(grads(out, [q, k, v, pse], seed), grads(reference, [q, k, v, pse], seed), strict=True):
        close(got, want, 1e-4)


def test_fusion_attention_dropout_is_reproduced_by_its_gradient_from_the_returned_seed(ops: Any) -> None:
    q, k, v = bnsd(1, 2, 8, 8)
    out, _, _, _, seed, offset, _ = ops.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.3, keep_prob=0.5)
    again = ops.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.3, keep_prob=0.5)[0]
    assert not torch.allclose(out, again)  # a fresh draw each call
    dy = torch.randn_like(out)
    dq, *_ = ops.npu_fusion_attention_grad(
        q, k, v, dy, 2, "BNSD", scale_value=0.3, keep_prob=0.5, seed=seed, offset=offset
    )
    close(dq, grads(out, [q], dy)[0], 1e-4)


def test_fusion_attention_refuses_what_it_does_not_simulate_naming_it(ops: Any) -> None:
    q = torch.randn(6, 2, 8)
    with pytest.raises(NotImplementedError, match="input_layout 'TND'"):
        ops.npu_fusion_attention(q, q, q, 2, "TND", actual_seq_qlen=[6], actual_seq_kvlen=[6])
    with pytest.raises(NotImplementedError, match="sparse_mode=4"):
        ops.npu_fusion_attention(q.unsqueeze(0), q.unsqueeze(0), q.unsqueeze(0), 2, "BSND", sparse_mode=4)
    with pytest.raises(ValueError, match="head_num 3 does not divide H=16"):
        ops.npu_fusion_attention(q.flatten(-2)[None], q.flatten(-2)[None], q.flatten(-2)[None], 3, "BSH")


# ------------------------------------------------------------------------------------------------ fake kernels
def test_fake_kernels_give_the_real_kernels_shapes_and_dtypes(ops: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    calls = [
        (ops.npu_rms_norm, (torch.randn(2, 3, 8), torch.randn(8))),
        (ops.npu_rotary_mul, (torch.randn(2, 2, 3, 8), torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8))),
        (ops.npu_swiglu, (torch.randn(2, 8), 0)),
        (ops._npu_dropout, (torch.randn(3, 50), 0.1)),
        (ops.npu_fusion_attention, (torch.randn(2, 6, 16), torch.randn(2, 6, 16), torch.randn(2, 6, 16), 2, "BSH")),
    ]
    for op, args in calls:
        real = op(*args)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = op(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args))
        real_t = [t for t in (real if isinstance(real, tuple) else (real,)) if isinstance(t, torch.Tensor)]
        fake_t = [t for t in (fake if isinstance(fake, tuple) else (fake,)) if isinstance(t, torch.Tensor)]
        assert [(t.shape, t.dtype) for t in fake_t] == [(t.shape, t.dtype) for t in real_t], op


def test_fusion_attention_refuses_dropout_in_a_traced_graph_whose_backward_would_miss_the_seed(ops: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode, pytest.raises(NotImplementedError, match=r"keep_prob < 1 in a traced graph"):
        q = mode.from_tensor(torch.randn(1, 2, 4, 8))
        ops.npu_fusion_attention(q, q, q, 2, "BNSD", keep_prob=0.9)
