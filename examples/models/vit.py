"""transformers ViT (2 layers, hidden 64, 32x32 images in 8x8 patches, random init) on the NPU as an Ascend user
writes it: a compiled forward (patch embedding: a convolution) and a training step (loss.backward, AdamW.step)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import ViTConfig, ViTForImageClassification

torch.manual_seed(0)
config = ViTConfig(
    image_size=32,
    patch_size=8,
    num_channels=3,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    num_labels=10,
)
model = ViTForImageClassification(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

pixels = torch.randn(2, 3, 32, 32).npu()
labels = torch.tensor([1, 7]).npu()
with torch.no_grad():
    logits = compiled(pixel_values=pixels).logits  # forward
model.train()
loss = compiled(pixel_values=pixels, labels=labels).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 10)
print(f"vit on npu: logits {tuple(logits.shape)}, loss {loss.item():.3f}")
