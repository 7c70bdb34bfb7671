"""Two training steps that reach torch_npu's iteration-range split where some of its releases fail (records
torch-npu-split-symbolic-sizes and torch-npu-cant-split-arguments, common/fixes/torch_npu_split_ranges.py). Run with
`codegen --provider torch_npu-wheel`; add `--without-fix <id>` to see a release fail without the record."""

# 1. A linear layer, a residual and a layer norm over a dynamic batch and sequence: torch_npu 2.8.0.post5, 2.9.1,
#    2.11.0.post3 and 2.12.0.post3 compare the symbolic batch*sequence size with `> 1` while deciding a fusion and
#    the compile fails ("cannot determine truth value of Relational").
# 2. RMSNorm (as transformers' Llama writes it) before a linear layer: in the backward torch_npu refuses a split by
#    raising CantSplit without the (expr, remaining) torch 2.11 requires (2.11.0.post3 and 2.12.0.post3, with the
#    first record off).

import torch
import torch_npu  # noqa: F401


def residual_layer_norm(x: torch.Tensor, weight: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x @ weight + x, (x.shape[-1],), gain)


def rms_norm_linear(x: torch.Tensor, gain: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return ((gain * normed) @ weight).sum()


def main() -> None:
    x = torch.randn(2, 8, 64, device="npu", requires_grad=True)
    weight = torch.randn(64, 64, device="npu", requires_grad=True)
    gain = torch.randn(64, device="npu", requires_grad=True)
    dynamic = x.detach().requires_grad_()
    # maybe_: the releases that build their kernels at the size hints pin both sizes (torch-npu-numels-pinned)
    torch._dynamo.maybe_mark_dynamic(dynamic, 0)
    torch._dynamo.maybe_mark_dynamic(dynamic, 1)
    torch.compile(residual_layer_norm)(dynamic, weight, gain).sum().backward()
    print("layer norm, dynamic batch and sequence:", tuple(dynamic.grad.shape))

    x = torch.randn(2, 16, 64, device="npu", requires_grad=True)
    torch.compile(rms_norm_linear)(x, gain, weight).backward()
    print("rms norm:", tuple(x.grad.shape))


if __name__ == "__main__":
    main()
