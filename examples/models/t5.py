"""transformers T5 (2 encoder and 2 decoder layers, d_model 64, random init) on the NPU as an Ascend user writes it:
a compiled encoder-decoder forward and a training step (loss.backward, AdamW.step)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
config = T5Config(
    vocab_size=128,
    d_model=64,
    d_kv=16,
    d_ff=128,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    decoder_start_token_id=0,
    pad_token_id=0,
)
model = T5ForConditionalGeneration(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

input_ids = torch.randint(1, config.vocab_size, (2, 16)).npu()
labels = torch.randint(1, config.vocab_size, (2, 8)).npu()
with torch.no_grad():
    logits = compiled(input_ids=input_ids, decoder_input_ids=labels).logits  # forward
model.train()
loss = compiled(input_ids=input_ids, labels=labels).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 8, config.vocab_size)
print(f"t5 on npu: logits {tuple(logits.shape)}, loss {loss.item():.3f}")
