"""transformers Qwen2 (2 layers, hidden 64, grouped-query attention with biased q/k/v, RoPE, random init) on the NPU
as an Ascend user writes it: a compiled forward and a training step (causal-LM loss, loss.backward, AdamW.step)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.manual_seed(0)
config = Qwen2Config(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    bos_token_id=0,
    eos_token_id=0,
)
model = Qwen2ForCausalLM(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

input_ids = torch.randint(0, config.vocab_size, (2, 16)).npu()
with torch.no_grad():
    logits = compiled(input_ids).logits  # forward
model.train()
loss = compiled(input_ids, labels=input_ids).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 16, config.vocab_size)
print(f"qwen2 on npu ({model.config._attn_implementation}): loss {loss.item():.3f}")
