"""A graph with one output made by RNG (dropout) and one that is not: codegen --execute compares only the second."""

import torch


def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.nn.functional.dropout(x, p=0.5, training=True), x.sin().sum(dim=-1)


torch.manual_seed(0)
torch.compile(fn)(torch.randn(8, 32, device="npu"))
