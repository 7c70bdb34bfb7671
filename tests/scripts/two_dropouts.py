"""Two dropouts in one graph, fused into one kernel that loads two seeds: under torch_npu 2.7.1's codegen the seed at
offset 1 is a call-site constexpr (Triton specialises an argument equal to 1), compiled into the binary."""

import torch
import torch_npu  # noqa: F401


def attend(x: torch.Tensor) -> torch.Tensor:
    a = torch.nn.functional.dropout(torch.softmax(x, -1), p=0.1, training=True)
    b = torch.nn.functional.dropout(torch.softmax(x * 2, -1), p=0.1, training=True)
    return a @ b.t()


x = torch.randn(4, 64, device="npu", requires_grad=True)
torch.compile(attend)(x).sum().backward()
