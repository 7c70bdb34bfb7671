"""Flex decoding on the NPU: one query token against a KV cache, grouped-query attention (GQA), with a score_mod."""

# Inductor lowers a query of at most 128 tokens with static batch and heads to its flex decoding kernel:
#     python -m npu_inductor_compat codegen examples/flex_decoding.py --out out/flex_decoding

import torch
from torch.nn.attention.flex_attention import flex_attention

BATCH, Q_HEADS, KV_HEADS, CACHE, DIM = 2, 8, 2, 256, 64


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + 0.01 * (q_idx - kv_idx)


def decode(q, k, v):
    return flex_attention(q, k, v, score_mod=relative_bias, enable_gqa=True)


def reference(q, k, v):
    """The same attention written out with matmul and softmax on CPU."""
    k, v = (t.repeat_interleave(Q_HEADS // KV_HEADS, dim=1) for t in (k, v))
    scores = q @ k.transpose(-2, -1) * DIM**-0.5 + 0.01 * (0 - torch.arange(CACHE))
    return torch.softmax(scores, dim=-1) @ v


torch.manual_seed(0)
q = torch.randn(BATCH, Q_HEADS, 1, DIM)
k, v = torch.randn(BATCH, KV_HEADS, CACHE, DIM), torch.randn(BATCH, KV_HEADS, CACHE, DIM)
out = torch.compile(decode)(q.to("npu"), k.to("npu"), v.to("npu"))
torch.testing.assert_close(out.cpu(), reference(q, k, v), atol=2e-5, rtol=2e-5)
print("flex decoding on npu (GQA, one query token) matches eager CPU")
