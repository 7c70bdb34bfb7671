"""Attention scores' softmax over a dynamic sequence length bounded as a model's positions bound it (BERT's 512): a
reduction of dynamic length short enough for torch_npu to make persistent."""

import torch
import torch_npu  # noqa: F401


def masked_softmax(scores: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    torch._check(scores.shape[-1] <= 512)
    return torch.softmax(scores + bias, dim=-1)


def main() -> None:
    scores = torch.randn(2, 4, 10, 12, device="npu")
    bias = torch.randn(2, 1, 1, 12, device="npu")
    # maybe_: the releases that build their kernels at the size hints pin the length (torch-npu-numels-pinned)
    torch._dynamo.maybe_mark_dynamic(scores, 3)
    torch._dynamo.maybe_mark_dynamic(bias, 3)
    print("softmax:", tuple(torch.compile(masked_softmax)(scores, bias).shape))


if __name__ == "__main__":
    main()
