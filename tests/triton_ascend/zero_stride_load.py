"""A load through a pointer block broadcast along XBLOCK (stride 0 there): what Inductor writes for a load inside a
masked subblock whose index has no x term (ViT's class token in a cat, Llama's RoPE backward). Rejection class C."""

from types import SimpleNamespace

import triton
import triton.language as tl


@triton.jit
def broadcast_pointer_load(in_ptr0, out_ptr0, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    tmp0 = tl.load(in_ptr0 + tl.broadcast_to(r0_index, [XBLOCK, R0_BLOCK]))
    tl.store(out_ptr0 + (r0_index + 64 * xindex), tmp0)


# what kernel_check reads from an Inductor autotuner: the jit function, its signature and the configs to lower
zero_stride_load = SimpleNamespace(
    fn=broadcast_pointer_load,
    triton_meta={"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "XBLOCK": "constexpr"}},
    configs=[SimpleNamespace(kwargs={"XBLOCK": xblock}, num_warps=1, num_stages=1) for xblock in (1, 8)],
)
