"""A planted wrong kernel: Inductor's Triton codegen made to add 1 to every sigmoid, between two matmuls (extern
kernels), so the kernel after them is wrong too; codegen --execute must name the sigmoid kernel."""

import torch
from torch._inductor.codegen import triton as triton_codegen

# planted: every sigmoid Inductor's Triton codegen emits is wrong by +1
_sigmoid = triton_codegen.TritonOverrides.sigmoid
triton_codegen.TritonOverrides.sigmoid = staticmethod(lambda x: f"({_sigmoid(x)} + 1)")


def fn(x, w):
    h = x.sin() @ w
    return (h.sigmoid() @ w).relu() * 3


x = torch.randn(8, 16, device="npu")
w = torch.randn(16, 16, device="npu")
torch.compile(fn)(x, w)
