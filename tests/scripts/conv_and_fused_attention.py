"""A training step through a convolution, torch_npu's fused attention (FlashAttention on Ascend), dropouts and a custom
op with an optional int list, written as Ascend users write them: their C++ wrapper calls a C-shim convolution and its
gradient, an op that also returns numbers, a kernel with a call-site constexpr and an op through Python with a list."""

from typing import Optional

import torch
import torch_npu


@torch.library.custom_op("npu_compat_test::scaled", mutates_args=())
def scaled(x: torch.Tensor, dims: Optional[list[int]] = None) -> torch.Tensor:  # noqa: UP045 (torch 2.7's schema)
    return x * (1 if dims is None else len(dims))


@scaled.register_fake
def _(x: torch.Tensor, dims: Optional[list[int]] = None) -> torch.Tensor:  # noqa: UP045
    return torch.empty_like(x)


def _keep_factor(ctx, inputs, output):
    ctx.factor = 1 if inputs[1] is None else len(inputs[1])


scaled.register_autograd(lambda ctx, grad: (grad * ctx.factor, None), setup_context=_keep_factor)


torch.manual_seed(0)
conv = torch.nn.Conv2d(4, 8, 3, padding=1).to("npu")


def step(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    q = conv(x).flatten(2).transpose(1, 2).unsqueeze(1)  # (batch, 1 head, 16 tokens, 8)
    attention = torch_npu.npu_fusion_attention(q, q, q, 1, "BNSD", scale=0.125)[0]
    # beside the loss, two dropouts fused into one kernel that loads two seeds: under torch_npu 2.7.1's codegen the
    # one at offset 1 is a call-site constexpr (Triton specialises an argument equal to 1), compiled into the binary
    scores = attention.detach().float().squeeze(1)
    a = torch.nn.functional.dropout(torch.softmax(scores, -1), p=0.1, training=True)
    b = torch.nn.functional.dropout(torch.softmax(scores * 2, -1), p=0.1, training=True)
    return scaled(attention.float(), [0, 1]).square().mean(), a + b


x = torch.randn(2, 4, 4, 4, device="npu", requires_grad=True)
loss, _ = torch.compile(step)(x)
loss.backward()
