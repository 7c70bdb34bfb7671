"""transformers GPT-2 (2 layers, hidden 64, random init) on the NPU as an Ascend user writes it: a compiled forward
and a training step (loss.backward, AdamW.step), both under bf16 autocast."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

input_ids = torch.randint(0, config.vocab_size, (2, 16)).npu()
with torch.autocast("npu", dtype=torch.bfloat16):
    with torch.no_grad():
        logits = compiled(input_ids).logits  # forward (inference)
    model.train()
    loss = compiled(input_ids, labels=input_ids).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.float().cpu()) and logits.shape == (2, 16, config.vocab_size)
print(f"gpt2 on npu (bf16 autocast): logits {tuple(logits.shape)}, loss {loss.item():.3f}")
