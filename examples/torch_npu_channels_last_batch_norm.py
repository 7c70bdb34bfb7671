"""Batch norm of a channels-last input, its gradient contiguous (as in ResNet's backward): without the record
torch-npu-two-reduction-tiling, torch_npu 2.7.1.post11 and 2.9.0.post9 tile the channels beside both reduction axes,
sum across them and fail their own TTIR check (docs/torch-npu-reports.md). `codegen --provider torch_npu-wheel`."""

import torch
import torch_npu  # noqa: F401

torch.manual_seed(0)
bn = torch.nn.BatchNorm2d(8).npu()
x = torch.randn(2, 8, 4, 4, device="npu").to(memory_format=torch.channels_last).requires_grad_()
grad = torch.randn(2, 8, 4, 4, device="npu")
out = torch.compile(lambda x: bn(x).contiguous())(x)
out.backward(grad)
x_cpu = x.detach().cpu().requires_grad_()
expected = torch.nn.functional.batch_norm(x_cpu, None, None, bn.weight.detach().cpu(), bn.bias.detach().cpu(), True)
expected.backward(grad.cpu())
torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)
torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=1e-4, atol=1e-4)
print("channels-last batch norm on npu: output and input gradient match eager CPU")
