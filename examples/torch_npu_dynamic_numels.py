"""One dynamic graph serving two batch sizes (40 rows, then 80). torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3 and
2.12.0.post3 build the kernel for the first size's numel and launch it so at the second (record
torch-npu-numels-pinned). Run with `codegen --provider torch_npu-wheel`; add `--without-fix torch-npu-numels-pinned`."""

import torch
import torch_npu  # noqa: F401


def scaled_relu(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * 2 + y).relu()


compiled = torch.compile(scaled_relu, dynamic=True)
for rows in (40, 80):
    x, y = torch.randn(rows, 32), torch.randn(rows, 32)
    out = compiled(x.npu(), y.npu())
    assert torch.equal(out.cpu(), scaled_relu(x, y)), rows
    print(f"{rows} rows: {tuple(out.shape)}")
