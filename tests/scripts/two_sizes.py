"""One dynamic graph called at two sizes: `codegen --execute` runs the compiled module at each."""

import torch


def rows(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() + 1.0).sum(-1)


def main() -> None:
    compiled = torch.compile(rows, dynamic=True)
    for columns in (16, 24):
        print("rows:", tuple(compiled(torch.randn(8, columns, device="npu")).shape))


if __name__ == "__main__":
    main()
