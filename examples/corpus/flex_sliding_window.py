"""Flex attention with a sliding-window causal mask and a soft-capping score_mod, dynamic shapes, forward and
backward, on the NPU (corpus)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

WINDOW, HEADS, DIM = 8, 2, 16


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


def soft_cap(score, b, h, q_idx, kv_idx):
    return 20.0 * torch.tanh(score / 20.0)


def attention(q, k, v, block_mask):
    return flex_attention(q, k, v, score_mod=soft_cap, block_mask=block_mask)


torch.manual_seed(0)
torch.npu.manual_seed(0)
compiled = torch.compile(attention, dynamic=True)
for seq in (40, 56):
    mask = create_block_mask(sliding_window, B=None, H=None, Q_LEN=seq, KV_LEN=seq, device="cpu")
    q, k, v = (torch.randn(1, HEADS, seq, DIM).to("npu").requires_grad_() for _ in range(3))
    out = compiled(q, k, v, mask.to("npu"))
    out.sum().backward()
    torch.npu.synchronize()
    assert q.grad is not None and torch.isfinite(out.detach().cpu()).all()
print("flex attention with a sliding window on npu: forward and backward, two lengths")
