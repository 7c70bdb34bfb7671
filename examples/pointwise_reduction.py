"""Pointwise + reduction on the NPU, forward and backward, compiled by Inductor."""

# See what Inductor generates for it without an NPU:
#     python -m npu_inductor_compat codegen examples/pointwise_reduction.py --out out/pointwise

import torch


def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu((torch.sin(x) * y + 1.0).sum(dim=-1))


torch.manual_seed(0)
x = torch.randn(8, 33, requires_grad=True)
y = torch.randn(8, 33)
x_npu = x.detach().to("npu").requires_grad_()
y_npu = y.to("npu")

out = torch.compile(fn)(x_npu, y_npu)
out.sum().backward()

expected = fn(x, y)
expected.sum().backward()
torch.testing.assert_close(out.cpu(), expected)
torch.testing.assert_close(x_npu.grad.cpu(), x.grad)
print("pointwise + reduction on npu: forward and backward match eager CPU")
