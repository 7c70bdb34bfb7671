"""A pre-norm transformer block on the NPU: forward, backward and an AdamW step, all compiled (corpus)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from torch import nn

DIM, HEADS, SEQ, BATCH = 32, 2, 16, 2


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(BATCH, SEQ, HEADS, DIM // HEADS).transpose(1, 2) for t in (q, k, v))
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(BATCH, SEQ, DIM))
        return x + self.mlp(self.norm2(x))


torch.npu.set_device(0)
torch.manual_seed(0)
torch.npu.manual_seed_all(0)
model = Block().to("npu")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)  # step counts on the npu too
x = torch.randn(BATCH, SEQ, DIM).to("npu")
loss = torch.compile(model)(x).square().mean()
loss.backward()
torch.compile(optimizer.step)()
stream = torch.npu.current_stream()
stream.synchronize()
print(f"peak npu memory: {torch.npu.max_memory_allocated() / 2**20:.1f} MiB on {torch.npu.get_device_name(0)}")
assert torch.isfinite(loss.cpu())
print("transformer block on npu: forward, backward and AdamW step compiled")
