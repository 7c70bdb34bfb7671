"""Embedding, gather and scatter_add with three batch sizes on the NPU (corpus)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)

VOCAB, DIM = 50, 16


def lookup(weight, ids, positions, buckets):
    embedded = torch.nn.functional.embedding(ids, weight)  # (B, L, D)
    picked = torch.gather(embedded, 1, positions[:, :, None].expand(-1, -1, DIM))
    pooled = torch.zeros(ids.shape[0], 4, DIM, device=ids.device)
    return pooled.scatter_add(1, buckets[:, :, None].expand(-1, -1, DIM), picked)


torch.npu.set_device("npu:0")
torch.manual_seed(0)
weight = torch.randn(VOCAB, DIM)
compiled = torch.compile(lookup)
for batch in (2, 3, 8):
    ids = torch.randint(0, VOCAB, (batch, 12))
    positions = torch.randint(0, 12, (batch, 6))
    buckets = torch.randint(0, 4, (batch, 6))
    args = (weight, ids, positions, buckets)
    out = compiled(*(t.to("npu") for t in args))
    torch.npu.synchronize()
    torch.testing.assert_close(out.cpu(), lookup(*args))
print("embedding, gather and scatter_add on npu match eager CPU for three batch sizes")
