"""torchvision MobileNetV3-Small (random init, 10 classes, 64x64 images: depthwise convolutions, hardswish,
squeeze-excitation) on the NPU as an Ascend user writes it: a compiled forward and a training step."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)
import torchvision

torch.manual_seed(0)
model = torchvision.models.mobilenet_v3_small(weights=None, num_classes=10).npu()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
compiled = torch.compile(model)

images = torch.randn(2, 3, 64, 64).npu()
labels = torch.tensor([3, 8]).npu()
model.eval()
with torch.no_grad():
    logits = compiled(images)  # forward (inference: batch norm uses its running statistics)
model.train()
loss = torch.nn.functional.cross_entropy(compiled(images), labels)  # training step
loss.backward()
optimizer.step()
optimizer.zero_grad()
assert torch.isfinite(loss.cpu()) and logits.shape == (2, 10)
print(f"mobilenet_v3_small on npu: logits {tuple(logits.shape)}, loss {loss.item():.3f}")
