"""transformers DistilBERT (2 layers, dim 64, random init) on the NPU as an Ascend user writes it: a compiled
sequence-classification forward and a training step (cross-entropy, loss.backward, AdamW.step)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import DistilBertConfig, DistilBertForSequenceClassification

torch.manual_seed(0)
config = DistilBertConfig(
    vocab_size=128,
    dim=64,
    hidden_dim=128,
    n_layers=2,
    n_heads=2,
    max_position_embeddings=64,
    num_labels=3,
)
model = DistilBertForSequenceClassification(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

input_ids = torch.randint(0, config.vocab_size, (2, 16)).npu()
attention_mask = torch.ones(2, 16, dtype=torch.long).npu()
attention_mask[1, 12:] = 0  # a padded second sequence
labels = torch.tensor([0, 2]).npu()
model.eval()
with torch.no_grad():
    logits = compiled(input_ids=input_ids, attention_mask=attention_mask).logits  # forward
model.train()
loss = compiled(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 3)
print(f"distilbert on npu: logits {tuple(logits.shape)}, loss {loss.item():.3f}")
