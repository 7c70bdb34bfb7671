"""Greedy decoding's last step: each row's largest logit over GPT-2's vocabulary (50257), for a batch of 4. torch_npu
2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 find no tile for so few, so long rows and keep a config that cannot
compile (record torch-npu-long-rows-tiles). Run with `codegen --check-kernels` on their torch."""

import torch
import torch_npu  # noqa: F401

logits = torch.randn(4, 50257)
scores, tokens = torch.compile(lambda t: torch.max(t, dim=-1))(logits.npu())
assert tokens.cpu().tolist() == logits.argmax(dim=-1).tolist()
print("next tokens:", tokens.cpu().tolist())
