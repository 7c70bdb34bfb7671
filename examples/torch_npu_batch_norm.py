"""A convolution, batch norm and ReLU step: without torch-npu-two-reduction-tiling and torch-npu-constant-load-reshape,
torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3, 2.12.0.post3 read `loop_x0` and misbroadcast a gradient; 2.10.0.post7,
2.13.0, 2.14.0 store a block into a scalar pointer (docs/torch-npu-reports.md). `codegen --provider torch_npu-wheel`."""

import torch
import torch_npu  # noqa: F401

model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).npu()
x = torch.randn(2, 4, 8, 8, device="npu")
loss = torch.compile(lambda x: model(x).sum())(x)
loss.backward()
expected = model.cpu()(x.cpu()).sum()  # batch norm in training mode: the same batch statistics
torch.testing.assert_close(loss.cpu(), expected, rtol=1e-4, atol=1e-4)
print("conv + batch norm + relu on npu: the training step matches eager CPU")
