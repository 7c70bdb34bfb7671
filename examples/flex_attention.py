"""Flex attention on the NPU, forward and backward, with a score_mod and a causal mask_mod (GQA, odd lengths)."""

# See what Inductor generates for it without an NPU (the dynamic C++-wrapper case is torch_npu issue 4431):
#     python -m npu_inductor_compat codegen examples/flex_attention.py --dynamic --out out/flex
#     python -m npu_inductor_compat codegen examples/flex_attention.py --dynamic --cpp-wrapper --out out/flex_cpp

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

BATCH, Q_HEADS, KV_HEADS, SEQ, DIM = 2, 4, 2, 37, 16


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + 0.01 * (q_idx - kv_idx)


def attention(q, k, v, block_mask):
    return flex_attention(q, k, v, score_mod=relative_bias, block_mask=block_mask, enable_gqa=True)


def reference(q, k, v):
    """The same attention written out with matmul and softmax on CPU (flex's own CPU backward is not on every line)."""
    k, v = (t.repeat_interleave(Q_HEADS // KV_HEADS, dim=1) for t in (k, v))
    q_idx, kv_idx = torch.arange(SEQ)[:, None], torch.arange(SEQ)[None, :]
    scores = q @ k.transpose(-2, -1) * DIM**-0.5 + 0.01 * (q_idx - kv_idx)
    scores = scores.masked_fill(~causal(None, None, q_idx, kv_idx), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


torch.manual_seed(0)
shapes = [(BATCH, Q_HEADS, SEQ, DIM), (BATCH, KV_HEADS, SEQ, DIM), (BATCH, KV_HEADS, SEQ, DIM)]
q, k, v = (torch.randn(shape, requires_grad=True) for shape in shapes)
# The block mask is built on CPU and moved: its construction is not what this example looks at.
mask = create_block_mask(causal, B=None, H=None, Q_LEN=SEQ, KV_LEN=SEQ, device="cpu")
q_npu, k_npu, v_npu = (t.detach().to("npu").requires_grad_() for t in (q, k, v))

out = torch.compile(attention)(q_npu, k_npu, v_npu, mask.to("npu"))
out.sum().backward()

expected = reference(q, k, v)
expected.sum().backward()
torch.testing.assert_close(out.cpu(), expected, atol=2e-5, rtol=2e-5)
for npu_tensor, cpu_tensor in ((q_npu, q), (k_npu, k), (v_npu, v)):
    torch.testing.assert_close(npu_tensor.grad.cpu(), cpu_tensor.grad, atol=2e-5, rtol=2e-5)
print("flex attention on npu: forward and backward match eager CPU")
