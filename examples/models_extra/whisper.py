"""transformers Whisper (a tiny config: 2 encoder and 2 decoder layers, d_model 64, 16 mel bins, random init) on the
NPU as an Ascend user writes it: conv1d front end, encoder-decoder forward and a training step (loss.backward)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
from transformers import WhisperConfig, WhisperForConditionalGeneration

torch.manual_seed(0)
config = WhisperConfig(
    vocab_size=128,
    num_mel_bins=16,
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    max_source_positions=32,  # 64 input frames: the second convolution has stride 2
    max_target_positions=32,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    decoder_start_token_id=1,
)
model = WhisperForConditionalGeneration(config).npu()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

features = torch.randn(2, config.num_mel_bins, 2 * config.max_source_positions).npu()  # log-mel spectrogram
labels = torch.randint(3, config.vocab_size, (2, 8)).npu()
model.eval()
with torch.no_grad():
    logits = compiled(input_features=features, decoder_input_ids=labels).logits  # forward
model.train()
loss = compiled(input_features=features, labels=labels).loss  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 8, config.vocab_size)
print(f"whisper on npu: logits {tuple(logits.shape)}, loss {loss.item():.3f}")
