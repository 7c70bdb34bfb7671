"""layer_norm, softmax, argmax and cumsum on the NPU (corpus)."""

import torch
import torch_npu  # noqa: F401  (as on Ascend; codegen answers it with its stand-in)


def ops(x, weight, bias):
    normed = torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias)
    return torch.softmax(normed, dim=-1), normed.argmax(dim=-1), torch.cumsum(x, dim=-1)


torch.manual_seed(0)
x, weight, bias = torch.randn(8, 64), torch.randn(64), torch.randn(64)
outs = torch.compile(ops)(x.to("npu"), weight.to("npu"), bias.to("npu"))
for got, want in zip(outs, ops(x, weight, bias), strict=True):
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
print("layer_norm, softmax, argmax and cumsum on npu match eager CPU")
