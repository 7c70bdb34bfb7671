"""transformers BERT (2 layers, hidden 64, random init) on the NPU as an Ascend user writes it: one dynamic-shape
compile serving two sequence lengths, with a training step (masked-LM loss, loss.backward, AdamW.step) at each."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)
config = BertConfig(
    vocab_size=128,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=64,
)
model = BertForMaskedLM(config).npu()
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model, dynamic=True)

for seq_len in (12, 20):  # two lengths, one graph: the sequence length is symbolic
    input_ids = torch.randint(0, config.vocab_size, (2, seq_len)).npu()
    attention_mask = torch.ones(2, seq_len, dtype=torch.long).npu()
    attention_mask[1, seq_len - 3 :] = 0  # a padded second sequence
    out = compiled(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
    out.loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    assert torch.isfinite(out.loss.cpu()) and out.logits.shape == (2, seq_len, config.vocab_size)
    print(f"bert on npu, sequence length {seq_len}: loss {out.loss.item():.3f}")
