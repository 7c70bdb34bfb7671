"""Llama's rotary position embedding (RoPE) with its backward: torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3 and
2.12.0.post3 generate a backward kernel reading `tmp4` before assigning it (docs/torch-npu-reports.md). Run with
`codegen --provider torch_npu-wheel --without-fix torch-npu-masked-load-permute-order`: the static check names it."""

import torch
import torch_npu  # noqa: F401


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # transformers' Llama apply_rotary_pos_emb (cos and sin unsqueezed over the heads), then attention scores: the
    # gradient reaching the rotated key comes back transposed (from the scores' matmul)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    query, key = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    return (query @ key.transpose(-2, -1)).sum()


def main() -> None:
    # as examples/models/llama.py: bf16, heads split from the projection (a transposed view)
    batch, seq, heads, dim = 2, 16, 2, 16
    q = torch.randn(batch, seq, heads * dim, device="npu", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(batch, seq, heads * dim, device="npu", dtype=torch.bfloat16, requires_grad=True)
    angles = torch.randn(batch, seq, dim, device="npu")
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)

    def step(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        query = q.view(batch, seq, heads, dim).transpose(1, 2)
        key = k.view(batch, seq, heads, dim).transpose(1, 2)
        return apply_rope(query, key, cos, sin).float()

    torch.compile(step)(q, k).backward()
    print("rope backward:", tuple(q.grad.shape), tuple(k.grad.shape))


if __name__ == "__main__":
    main()
