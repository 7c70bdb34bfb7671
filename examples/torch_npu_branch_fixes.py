"""Two models that hit torch_npu codegen bugs fixed on some of its release branches and not others."""

# Run with `codegen --provider torch_npu-wheel` (torch 2.7.1: torch_npu 2.7.1.post11 has both bugs); add
# `--without-fix torch-npu-masked-load-size-symbols torch-npu-persistent-reduction-ub` to see the code it generates
# without this package's records.
#
# 1. slice_scatter of a shorter tensor into a longer one, both sizes dynamic: the load of the shorter tensor must keep
#    the mask `x0 < its size`; torch_npu's filter_masks drops it (the size symbol fails its axis test), and the kernel
#    reads past the end of that tensor.
# 2. softmax over 2048 elements per row: torch_npu 2.7.1's index kernel makes it a persistent reduction (4096 allowed on
#    every SoC), more than the unified buffer of an Ascend910B holds; its later branches allow 1024 off Ascend950.

import torch
import torch_npu  # noqa: F401


def scatter_prefix(base: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
    return torch.slice_scatter(base, prefix * 2.0, dim=0, start=0, end=prefix.shape[0]) + 1.0


def row_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def main() -> None:
    base = torch.randn(256, device="npu")
    prefix = torch.randn(200, device="npu")
    # maybe_: the releases that build their kernels at the size hints pin both sizes (torch-npu-numels-pinned)
    torch._dynamo.maybe_mark_dynamic(base, 0)
    torch._dynamo.maybe_mark_dynamic(prefix, 0)
    scattered = torch.compile(scatter_prefix, dynamic=True)(base, prefix)
    print("slice_scatter:", tuple(scattered.shape))

    rows = torch.randn(64, 2048, device="npu")
    print("softmax:", tuple(torch.compile(row_softmax)(rows).shape))


if __name__ == "__main__":
    main()
