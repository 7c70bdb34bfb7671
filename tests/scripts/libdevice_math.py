"""Pointwise math Inductor emits as libdevice calls (tanh GELU, erf, log1p): externs Triton's interpreter cannot run
itself, which codegen --execute runs as torch's functions of the same meaning."""

import torch


def fn(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh") + torch.erf(x) + torch.log1p(x.abs())


torch.manual_seed(0)
torch.compile(fn)(torch.randn(16, 8, device="npu"))
