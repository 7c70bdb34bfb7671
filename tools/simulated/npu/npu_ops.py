"""torch_npu's fused operators that libraries reach, as real ``npu::`` operators on the simulated NPU: torch_npu's
schemas, CPU reference kernels, fake kernels (Inductor calls them as extern kernels, as on hardware) and autograd.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.tools.simulated.npu.npu_attention import (
    NotSimulatedArgument,
    _dense,
    _fa_grad,
    _fa_setup,
    _fusion_attention,
    _fusion_attention_fake,
    _fusion_attention_grad,
    _fusion_attention_grad_fake,
    _on_cpu,
    _refuse,
)

__all__ = ["NAMES", "SCHEMAS", "NotSimulatedArgument", "implement_defined", "register"]

# torch_npu's schemas, from Ascend/op-plugin op_plugin/config/op_plugin_functions.yaml (the yaml torch_npu builds its
# npu:: operators from; read at commit 517f2e7d of its master branch). Each kernel below cites its documentation.
SCHEMAS = {
    "npu_rms_norm": "npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)",
    "npu_rms_norm_backward": "npu_rms_norm_backward(Tensor dy, Tensor self, Tensor gamma, Tensor rstd) "
    "-> (Tensor, Tensor)",
    "npu_rotary_mul": "npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half', Tensor? rotate=None)"
    " -> Tensor",
    "npu_rotary_mul_backward": "npu_rotary_mul_backward(Tensor grad, Tensor self, Tensor r1, Tensor r2, "
    "str rotary_mode='half') -> (Tensor, Tensor, Tensor)",
    "npu_swiglu": "npu_swiglu(Tensor self, int dim=-1) -> Tensor",
    "npu_swiglu_backward": "npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor",
    "_npu_dropout": "_npu_dropout(Tensor self, float p) -> (Tensor, Tensor)",
    "npu_dropout_backward": "npu_dropout_backward(Tensor grad_output, Tensor mask, float p) -> Tensor",
    "npu_fusion_attention": "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, "
    "str input_layout, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., "
    "float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, "
    "int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
    'bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None, '
    "Tensor? dropout_mask=None, int seed=0, int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)",
    "npu_fusion_attention_grad": "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, "
    "int head_num, str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
    "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
    "float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, "
    "int inner_precise=0, int seed=0, int offset=0, int numels=0, int[]? prefix=None, int[]? actual_seq_qlen=None, "
    "int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, "
    'str softmax_layout="", Tensor? sink=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)',
}
NAMES = tuple(SCHEMAS)  # what torch_npu.<name> answers in the stand-in (torch.ops.npu.<name>)


# ------------------------------------------------------------------------------------------------ npu_rms_norm
# https://www.hiascend.com/document/detail/zh/Pytorch/700/apiref/apilist/ptaoplist_000860.html:
# y = x / sqrt(mean(x^2 over gamma's dims) + epsilon) * gamma; rstd (float32) has x's shape with gamma's dims 1.
def _check_rms_norm(x: Any, gamma: Any) -> None:
    # torch_npu's own check and message (Ascend/op-plugin op_plugin/ops/aclops/RmsNormKernelNpu.cpp)
    if x.dim() < gamma.dim():
        raise RuntimeError("The gamma shape should not be bigger than self shape.")


def _rms_norm(x: Any, gamma: Any, epsilon: float = 1e-6) -> tuple[Any, Any]:
    import torch

    _check_rms_norm(x, gamma)
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    cx, cg = _on_cpu(x, gamma)
    xf = cx.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + epsilon)
    y = (xf * rstd * cg.float()).to(x.dtype)
    return _dense(y, x), _dense(rstd, x)


def _rms_norm_fake(x: Any, gamma: Any, epsilon: float = 1e-6) -> tuple[Any, Any]:
    import torch

    _check_rms_norm(x, gamma)
    shape = [*x.shape[: x.dim() - gamma.dim()], *([1] * gamma.dim())]
    return x.new_empty(x.shape), x.new_empty(shape, dtype=torch.float32)


# its gradient (RmsNormGrad; the formula of Ascend/pytorch torch_npu/_inductor/decomposition.py npu_rms_norm_backward):
# dx in x's dtype; dgamma float32 (the Grad op's output), summed over x's leading dims
def _rms_norm_backward(dy: Any, x: Any, gamma: Any, rstd: Any) -> tuple[Any, Any]:
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    cdy, cx, cg, cr = (t.float() for t in _on_cpu(dy, x, gamma, rstd))
    normed = cx * cr
    dn = cdy * cg
    dx = (dn - normed * (dn * normed).mean(dims, keepdim=True)) * cr
    dgamma = (cdy * normed).sum(tuple(range(x.dim() - gamma.dim())))
    return _dense(dx.to(x.dtype), x), _dense(dgamma, x)


def _rms_norm_backward_fake(dy: Any, x: Any, gamma: Any, rstd: Any) -> tuple[Any, Any]:
    import torch

    return x.new_empty(x.shape), gamma.new_empty(gamma.shape, dtype=torch.float32)


def _rms_norm_setup(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, Any]) -> None:
    ctx.save_for_backward(inputs[0], inputs[1], output[1])


def _rms_norm_grad(ctx: Any, dy: Any, _drstd: Any) -> tuple[Any, Any, None]:
    import torch

    x, gamma, rstd = ctx.saved_tensors
    dx, dgamma = torch.ops.npu.npu_rms_norm_backward(dy, x, gamma, rstd)
    return dx, dgamma.to(gamma.dtype), None


# ------------------------------------------------------------------------------------------------ npu_rotary_mul
# https://gitcode.com/Ascend/op-plugin/blob/7.3.0/docs/context/torch_npu-npu_rotary_mul.md:
# out = x * r1 + rotate(x) * r2; rotary_mode "half": rotate(x) = cat(-x2, x1) over the halves of the last dim,
# "interleave": the pairs (x[2i], x[2i+1]) become (-x[2i+1], x[2i]).
def _rotate(x: Any, mode: str) -> Any:
    import torch

    if mode == "half":
        first, second = x.chunk(2, dim=-1)
        return torch.cat((-second, first), dim=-1)
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def _rotate_back(g: Any, mode: str) -> Any:
    """The transpose of _rotate (its gradient)."""
    import torch

    if mode == "half":
        first, second = g.chunk(2, dim=-1)
        return torch.cat((second, -first), dim=-1)
    return torch.stack((g[..., 1::2], -g[..., 0::2]), dim=-1).flatten(-2)


def _check_rotary(x: Any, mode: str, rotate: Any = None) -> None:
    if mode not in ("half", "interleave"):
        raise ValueError(f"torch_npu.npu_rotary_mul: rotary_mode {mode!r}: valid: 'half', 'interleave'")
    if rotate is not None:
        raise _refuse("npu_rotary_mul", "rotate= (a rotation matrix)")
    if x.shape[-1] % 2:
        raise ValueError(f"torch_npu.npu_rotary_mul: the last dimension ({x.shape[-1]}) must be even")


# Mixed dtypes: torch_npu casts r1 and r2 (and the gradient) to x's dtype and allocates every output in x's dtype
# (Ascend/op-plugin op_plugin/ops/opapi/RotaryMulKernelNpuOpApi.cpp and RotaryMulBackwardKernelNpuOpApi.cpp).
def _rotary_mul(x: Any, r1: Any, r2: Any, rotary_mode: str = "half", rotate: Any = None) -> Any:
    _check_rotary(x, rotary_mode, rotate)
    cx, c1, c2 = (t.to(x.dtype) for t in _on_cpu(x, r1, r2))
    return _dense(cx * c1 + _rotate(cx, rotary_mode) * c2, x)


def _rotary_mul_fake(x: Any, r1: Any, r2: Any, rotary_mode: str = "half", rotate: Any = None) -> Any:
    _check_rotary(x, rotary_mode, rotate)
    return x.new_empty(x.shape)


def _rotary_mul_backward(grad: Any, x: Any, r1: Any, r2: Any, rotary_mode: str = "half") -> tuple[Any, Any, Any]:
    _check_rotary(x, rotary_mode)
    cg, cx, c1, c2 = (t.to(x.dtype) for t in _on_cpu(grad, x, r1, r2))
    dx = cg * c1 + _rotate_back(cg * c2, rotary_mode)
    dr1 = (cg * cx).sum_to_size(r1.shape)
    dr2 = (cg * _rotate(cx, rotary_mode)).sum_to_size(r2.shape)
    return _dense(dx, x), _dense(dr1, x), _dense(dr2, x)


def _rotary_mul_backward_fake(grad: Any, x: Any, r1: Any, r2: Any, rotary_mode: str = "half") -> tuple[Any, Any, Any]:
    return x.new_empty(grad.shape), x.new_empty(r1.shape), x.new_empty(r2.shape)


def _rotary_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*inputs[:3])
    ctx.mode = inputs[3] if len(inputs) > 3 else "half"


def _rotary_grad(ctx: Any, grad: Any) -> tuple[Any, ...]:
    import torch

    x, r1, r2 = ctx.saved_tensors
    dx, dr1, dr2 = torch.ops.npu.npu_rotary_mul_backward(grad, x, r1, r2, ctx.mode)
    return dx, dr1.to(r1.dtype), dr2.to(r2.dtype), None, None


# ------------------------------------------------------------------------------------------------ npu_swiglu
# https://hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000834.html:
# x split in two halves a, b along dim; out = silu(a) * b.
def _swiglu(x: Any, dim: int = -1) -> Any:
    import torch

    first, second = x.cpu().chunk(2, dim=dim)
    return _dense((torch.nn.functional.silu(first.float()) * second.float()).to(x.dtype), x)


def _swiglu_fake(x: Any, dim: int = -1) -> Any:
    shape = list(x.shape)
    shape[dim] //= 2
    return x.new_empty(shape)


def _swiglu_backward(grad_output: Any, x: Any, dim: int = -1) -> Any:
    import torch

    first, second = (t.float() for t in x.cpu().chunk(2, dim=dim))
    g = grad_output.cpu().float()
    sig = torch.sigmoid(first)
    d_first = g * second * sig * (1 + first * (1 - sig))
    d_second = g * first * sig
    return _dense(torch.cat((d_first, d_second), dim=dim).to(x.dtype), x)


def _swiglu_backward_fake(grad_output: Any, x: Any, dim: int = -1) -> Any:
    return x.new_empty(x.shape)


def _swiglu_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(inputs[0])
    ctx.dim = inputs[1] if len(inputs) > 1 else -1


def _swiglu_grad(ctx: Any, grad: Any) -> tuple[Any, None]:
    import torch

    (x,) = ctx.saved_tensors
    return torch.ops.npu.npu_swiglu_backward(grad, x, ctx.dim), None


# ------------------------------------------------------------------------------------------------ _npu_dropout
# Ascend/op-plugin docs/zh/custom_APIs/torch_npu/, page torch_npu-_npu_dropout.md (its example: 4 elements, a
# 16-byte mask), Ascend/pytorch torch_npu/_inductor/decomposition.py (_override_native_dropout_decomp: native_dropout
# is _npu_dropout, its backward npu_dropout_backward with p) and _npu_meta_registration.py (the mask: uint8, one bit
# per element, ceil(numel/128)*128/8 bytes). The bit order in a byte is not documented: here element i is bit i % 8.
def _mask_bytes(numel: int) -> int:
    return (numel + 127) // 128 * 128 // 8


def _dropout(x: Any, p: float) -> tuple[Any, Any]:
    import torch

    if not 0.0 <= p <= 1.0:
        raise ValueError(f"torch_npu._npu_dropout: p={p} is not a probability")
    numel = x.numel()
    keep = torch.rand(_mask_bytes(numel) * 8) >= p  # the CPU generator: the simulated NPU's default generator
    weights = torch.tensor([1 << bit for bit in range(8)], dtype=torch.int32)
    mask = (keep.view(-1, 8).to(torch.int32) * weights).sum(-1).to(torch.uint8)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    out = x.cpu() * keep[:numel].view(x.shape).to(x.dtype) * scale
    return _dense(out, x), _dense(mask, x)


def _dropout_fake(x: Any, p: float) -> tuple[Any, Any]:
    import torch

    return x.new_empty(x.shape), x.new_empty(_mask_bytes(x.numel()), dtype=torch.uint8)


def _unpack(mask: Any, numel: int) -> Any:
    import torch

    bits = torch.tensor([1 << bit for bit in range(8)], dtype=torch.uint8)
    return ((mask.cpu().view(-1, 1) & bits) != 0).flatten()[:numel]


def _dropout_backward(grad_output: Any, mask: Any, p: float) -> Any:
    if mask.numel() < _mask_bytes(grad_output.numel()):
        raise ValueError(
            f"torch_npu.npu_dropout_backward: mask of {mask.numel()} bytes for {grad_output.numel()} elements (needs "
            f"{_mask_bytes(grad_output.numel())})"
        )
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    keep = _unpack(mask, grad_output.numel()).view(grad_output.shape)
    return _dense(grad_output.cpu() * keep.to(grad_output.dtype) * scale, grad_output)


def _dropout_backward_fake(grad_output: Any, mask: Any, p: float) -> Any:
    return grad_output.new_empty(grad_output.shape)


def _dropout_setup(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, Any]) -> None:
    ctx.save_for_backward(output[1])
    ctx.p = inputs[1]


def _dropout_grad(ctx: Any, grad: Any, _dmask: Any) -> tuple[Any, None]:
    import torch

    (mask,) = ctx.saved_tensors
    return torch.ops.npu.npu_dropout_backward(grad, mask, ctx.p), None


# ------------------------------------------------------------------------------------------------ registration
KERNELS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "npu_rms_norm": (_rms_norm, _rms_norm_fake),
    "npu_rms_norm_backward": (_rms_norm_backward, _rms_norm_backward_fake),
    "npu_rotary_mul": (_rotary_mul, _rotary_mul_fake),
    "npu_rotary_mul_backward": (_rotary_mul_backward, _rotary_mul_backward_fake),
    "npu_swiglu": (_swiglu, _swiglu_fake),
    "npu_swiglu_backward": (_swiglu_backward, _swiglu_backward_fake),
    "_npu_dropout": (_dropout, _dropout_fake),
    "npu_dropout_backward": (_dropout_backward, _dropout_backward_fake),
    "npu_fusion_attention": (_fusion_attention, _fusion_attention_fake),
    "npu_fusion_attention_grad": (_fusion_attention_grad, _fusion_attention_grad_fake),
}
AUTOGRAD = {  # torch_npu's derivatives.yaml pairs each forward with its backward op
    "npu_rms_norm": (_rms_norm_setup, _rms_norm_grad),
    "npu_rotary_mul": (_rotary_setup, _rotary_grad),
    "npu_swiglu": (_swiglu_setup, _swiglu_grad),
    "_npu_dropout": (_dropout_setup, _dropout_grad),
    "npu_fusion_attention": (_fa_setup, _fa_grad),
}


def _below_autograd(name: str) -> Callable[..., Any]:
    """An autograd kernel that records nothing: the operator's result does not require grad."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        import torch

        with torch._C._AutoDispatchBelowAutograd():
            return getattr(torch.ops.npu, name).default(*args, **kwargs)

    return kernel


def register() -> Any:
    """Define the ``npu::`` operators with their kernels (one for every device: the reference runs on the CPU), fake
    kernels and autograd; returns the torch.library.Library, whose ``_destroy()`` removes them all again."""
    import torch

    library = torch.library.Library("npu", "DEF")
    try:
        for schema in SCHEMAS.values():
            library.define(schema)
        _implement(library, set(KERNELS), fake=set(KERNELS))
    except BaseException:
        library._destroy()
        raise
    return library


def implement_defined() -> tuple[Any, list[str]]:
    """Give torch_npu's own ``npu::`` schemas (defined from its wheel's yaml) the same kernels and autograd, as its
    native op-plugin registrations do on a host; a fake kernel only where torch_npu registered no Meta kernel.
    Returns the IMPL library and the operators left alone, each with why (absent, or a schema other than ours)."""
    import torch

    skipped: list[str] = []
    fake: set[str] = set()
    chosen: set[str] = set()
    for name, schema in SCHEMAS.items():
        packet = getattr(torch.ops.npu, name, None)
        if packet is None:
            skipped.append(f"npu::{name}: the wheel defines no such operator")
        elif packet.default._schema != torch._C.parse_schema(f"npu::{schema}"):
            skipped.append(f"npu::{name}: the wheel's schema {str(packet.default._schema)!r} is not the reference's")
        else:
            chosen.add(name)
            if not torch._C._dispatch_has_kernel_for_dispatch_key(f"npu::{name}", "Meta"):
                fake.add(name)
    library = torch.library.Library("npu", "IMPL")
    try:
        _implement(library, chosen, fake)
    except BaseException:
        library._destroy()
        raise
    return library, skipped


def _implement(library: Any, names: set[str], fake: set[str]) -> None:
    """The reference kernels, autograd and (for ``fake``) fake kernels of ``names`` into ``library``."""
    import torch

    for name in sorted(names):
        kernel, fake_kernel = KERNELS[name]
        library.impl(name, kernel, "CompositeExplicitAutograd")
        if name in fake:
            torch.library.register_fake(f"npu::{name}", fake_kernel, lib=library)
    for name, (setup, backward) in AUTOGRAD.items():
        if name in names:
            torch.library.register_autograd(f"npu::{name}", backward, setup_context=setup, lib=library)
    # the backward operators have no derivative (no double backward) but need an autograd kernel: torch 2.9's
    # Python dispatcher finds none for AutogradPrivateUse1 while tracing a backward graph
    for name in sorted(names - set(AUTOGRAD)):
        library.impl(name, _below_autograd(name), "Autograd")
