"""torch_npu.npu_fusion_attention and its gradient on the simulated NPU: a CPU reference of the fused attention
(layouts, masks, sparse modes, grouped heads, pse, dropout by seed) and its fake kernel (npu_ops.py registers them).
"""

from __future__ import annotations

from typing import Any


class NotSimulatedArgument(NotImplementedError):
    """An argument value of a torch_npu operator the simulated kernel does not reproduce."""


def _refuse(op: str, what: str) -> NotSimulatedArgument:
    return NotSimulatedArgument(f"torch_npu.{op} on the simulated NPU: {what} is not simulated")


def _on_cpu(*tensors: Any) -> list[Any]:
    """CPU copies (the simulated NPU's memory is host memory: the reference kernels run on the CPU directly)."""
    return [None if t is None else t.cpu() for t in tensors]


def _dense(result: Any, like: Any) -> Any:
    """A kernel's result on ``like``'s device, contiguous: torch_npu's kernels allocate their outputs dense from the
    sizes (op-plugin's apply_tensor_without_format), whatever the inputs' strides; the fakes say the same."""
    return result.contiguous().to(like.device)


# ------------------------------------------------------------------------------------------------ fusion attention
# https://hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000850.html (and the formula of
# https://gitcode.com/Ascend/MindSpeed/blob/master/docs/zh/ops/fusion_attention.md):
# out = Dropout(Softmax(Mask(scale * (pse + q @ k^T), atten_mask)), keep_prob) @ v; atten_mask True (1) = masked;
# sparse_mode 0/1: the mask as given (0 also bands by pre_tockens/next_tockens), 2: top-left causal, 3: bottom-right
# causal (2 and 3 take a compressed 2048x2048 mask on hardware; here the causal mask is built); key/value may have
# fewer heads than query (head_num) when it divides; softmax_max/softmax_sum are [B, N, Sq, 8] float32.
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")
_NO_BAND = 2147483647


def _to_bnsd(t: Any, layout: str, head_dim: int) -> Any:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.unflatten(-1, (t.shape[-1] // head_dim, head_dim)).transpose(1, 2)
    return t.unflatten(-1, (t.shape[-1] // head_dim, head_dim)).permute(1, 2, 0, 3)  # SBH


def _from_bnsd(t: Any, layout: str) -> Any:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.transpose(1, 2).flatten(-2)
    return t.permute(2, 0, 1, 3).flatten(-2)  # SBH


def _head_dim(query: Any, head_num: int, layout: str) -> int:
    if layout not in LAYOUTS:
        raise _refuse("npu_fusion_attention", f"input_layout {layout!r} (simulated: {', '.join(LAYOUTS)})")
    if query.dim() != len(layout):
        raise ValueError(
            f"torch_npu.npu_fusion_attention: input_layout {layout!r} needs {len(layout)}-d query, got "
            f"shape {tuple(query.shape)}"
        )
    if layout in ("BSH", "SBH"):
        if head_num <= 0 or query.shape[-1] % head_num:
            raise ValueError(f"torch_npu.npu_fusion_attention: head_num {head_num} does not divide H={query.shape[-1]}")
        return int(query.shape[-1]) // head_num
    heads = query.shape[layout.index("N")]
    if heads != head_num:
        raise ValueError(f"torch_npu.npu_fusion_attention: head_num {head_num}, but query has {heads} heads")
    return int(query.shape[-1])


def _masked(opts: dict[str, Any], sq: int, skv: int, atten_mask: Any) -> Any:
    """The [.., Sq, Skv] bool mask (True: not attended) the options describe, or None."""
    import torch

    mode = opts["sparse_mode"]
    rows = torch.arange(sq).view(-1, 1)
    cols = torch.arange(skv).view(1, -1)
    if mode in (2, 3):
        return cols > rows + (skv - sq if mode == 3 else 0)
    if mode not in (0, 1):
        raise _refuse("npu_fusion_attention", f"sparse_mode={mode} (simulated: 0, 1, 2, 3)")
    mask = None if atten_mask is None else atten_mask.cpu().to(torch.bool)
    if mode == 0 and (opts["pre_tockens"] < _NO_BAND or opts["next_tockens"] < _NO_BAND):
        band = (cols - rows > opts["next_tockens"]) | (rows - cols > opts["pre_tockens"])
        mask = band if mask is None else mask | band
    return mask


def _forward(q: Any, k: Any, v: Any, pse: Any, atten_mask: Any, opts: dict[str, Any]) -> dict[str, Any]:
    """The reference in BNSD, float32, on CPU tensors: every intermediate the gradient needs."""
    import torch

    layout, head_num = opts["input_layout"], opts["head_num"]
    d = _head_dim(q, head_num, layout)
    qb, kb, vb = (_to_bnsd(t, layout, d).float() for t in (q, k, v))
    if head_num % kb.shape[1]:
        raise ValueError(f"torch_npu.npu_fusion_attention: key/value heads ({kb.shape[1]}) do not divide {head_num}")
    group = head_num // kb.shape[1]
    kb, vb = kb.repeat_interleave(group, dim=1), vb.repeat_interleave(group, dim=1)
    scores = qb @ kb.transpose(-1, -2)
    if pse is not None:
        scores = scores + pse.float()
    scores = scores * opts["scale"]
    mask = _masked(opts, qb.shape[2], kb.shape[2], atten_mask)
    if mask is not None:  # finite: a fully masked row attends uniformly instead of giving NaN
        scores = scores.masked_fill(mask, torch.finfo(torch.float32).min)
    peak = scores.amax(-1, keepdim=True)
    total = (scores - peak).exp().sum(-1, keepdim=True)
    probs = (scores - peak).exp() / total
    dropped = probs
    if opts["keep_prob"] < 1.0:  # the mask is regenerated from the seed: the gradient draws the same one
        generator = torch.Generator().manual_seed(opts["seed"] + opts["offset"])
        keep = torch.rand(probs.shape, generator=generator) < opts["keep_prob"]
        dropped = probs * keep / opts["keep_prob"]
    found = {"q": qb, "k": kb, "v": vb, "group": group, "mask": mask, "peak": peak, "total": total}
    return {**found, "probs": probs, "dropped": dropped, "out": dropped @ vb}


def _backward(fwd: dict[str, Any], dy: Any, opts: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """(dq, dk, dv, dscores-before-scale) in BNSD for the output gradient ``dy`` (BNSD, float32)."""
    probs, dropped = fwd["probs"], fwd["dropped"]
    dv = dropped.transpose(-1, -2) @ dy
    ddropped = dy @ fwd["v"].transpose(-1, -2)
    dprobs = ddropped * (dropped / probs.clamp_min(1e-30)) if opts["keep_prob"] < 1.0 else ddropped
    dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
    if fwd["mask"] is not None:  # masked_fill passes no gradient to the positions it filled
        dscores = dscores.masked_fill(fwd["mask"], 0.0)
    draw = dscores * opts["scale"]  # the gradient of q k^T + pse
    dq, dk = draw @ fwd["k"], draw.transpose(-1, -2) @ fwd["q"]
    if fwd["group"] > 1:  # repeat_interleave's gradient: the sum over each group of query heads
        dk, dv = (t.unflatten(1, (-1, fwd["group"])).sum(2) for t in (dk, dv))
    return dq, dk, dv, draw


def _fa_options(head_num: int, input_layout: str, **given: Any) -> dict[str, Any]:
    if input_layout not in LAYOUTS:  # TND (variable lengths) first: its actual_seq_* arguments follow from it
        raise _refuse("npu_fusion_attention", f"input_layout {input_layout!r} (simulated: {', '.join(LAYOUTS)})")
    for name in ("padding_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sink", "dropout_mask"):
        if given.get(name) is not None:
            raise _refuse("npu_fusion_attention", f"{name}=")
    return {"head_num": head_num, "input_layout": input_layout, **given}


def _fusion_attention(
    query: Any,
    key: Any,
    value: Any,
    head_num: int,
    input_layout: str,
    pse: Any = None,
    padding_mask: Any = None,
    atten_mask: Any = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _NO_BAND,
    next_tockens: int = _NO_BAND,
    inner_precise: int = 0,
    prefix: Any = None,
    actual_seq_qlen: Any = None,
    actual_seq_kvlen: Any = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    softmax_layout: str = "",
    sink: Any = None,
    dropout_mask: Any = None,
    seed: int = 0,
    offset: int = 0,
) -> tuple[Any, ...]:
    import torch

    if keep_prob < 1.0:  # a fresh seed from the default generator; the gradient regenerates the mask from it
        seed, offset = int(torch.randint(0, 2**31 - 1, ()).item()), 0
    opts = _fa_options(
        head_num,
        input_layout,
        padding_mask=padding_mask,
        prefix=prefix,
        sink=sink,
        actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=actual_seq_kvlen,
        dropout_mask=dropout_mask,
        scale=scale,
        keep_prob=keep_prob,
        pre_tockens=pre_tockens,
        next_tockens=next_tockens,
        sparse_mode=sparse_mode,
        seed=seed,
        offset=offset,
    )
    q, k, v, p, m = _on_cpu(query, key, value, pse, atten_mask)
    fwd = _forward(q, k, v, p, m, opts)
    out = _from_bnsd(fwd["out"], input_layout).to(query.dtype)
    peak, total = (fwd[name].expand(*fwd[name].shape[:-1], 8) for name in ("peak", "total"))
    numels = peak.shape[0] * peak.shape[1] * peak.shape[2] * _to_bnsd(k, input_layout, 1).shape[2]
    return (
        _dense(out, query),
        _dense(peak, query),
        _dense(total, query),
        query.new_empty((0,)),
        seed,
        offset,
        int(numels),
    )


def _fusion_attention_fake(
    query: Any,
    key: Any,
    value: Any,
    head_num: int,
    input_layout: str,
    pse: Any = None,
    padding_mask: Any = None,
    atten_mask: Any = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    *args: Any,
    **kwargs: Any,
) -> tuple[Any, ...]:
    import torch

    d = _head_dim(query, head_num, input_layout)
    qb = _to_bnsd(query, input_layout, d)
    skv = _to_bnsd(key, input_layout, d).shape[2]
    stats = query.new_empty((qb.shape[0], head_num, qb.shape[2], 8), dtype=torch.float32)
    if keep_prob < 1.0:  # the seed is drawn at run time: a traced backward would bake in the fake's constant
        raise _refuse("npu_fusion_attention", "keep_prob < 1 in a traced graph (its dropout seed is run-time data)")
    numels = qb.shape[0] * head_num * qb.shape[2] * skv
    return (query.new_empty(query.shape), stats, stats.new_empty(stats.shape), query.new_empty((0,)), 0, 0, numels)


_FA_ARGS = (
    "pse",
    "padding_mask",
    "atten_mask",
    "scale",
    "keep_prob",
    "pre_tockens",
    "next_tockens",
    "inner_precise",
    "prefix",
    "actual_seq_qlen",
    "actual_seq_kvlen",
    "sparse_mode",
)


def _fusion_attention_grad(
    query: Any,
    key: Any,
    value: Any,
    dy: Any,
    head_num: int,
    input_layout: str,
    *,
    pse: Any = None,
    padding_mask: Any = None,
    atten_mask: Any = None,
    softmax_max: Any = None,
    softmax_sum: Any = None,
    softmax_in: Any = None,
    attention_in: Any = None,
    scale_value: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _NO_BAND,
    next_tockens: int = _NO_BAND,
    inner_precise: int = 0,
    seed: int = 0,
    offset: int = 0,
    numels: int = 0,
    prefix: Any = None,
    actual_seq_qlen: Any = None,
    actual_seq_kvlen: Any = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    softmax_layout: str = "",
    sink: Any = None,
) -> tuple[Any, ...]:
    """(dq, dk, dv, dpse, dsink): the reference forward recomputed and its gradient written out (the saved softmax
    statistics are the hardware's shortcut, not needed here); dpse and dsink are empty when pse and sink are None."""

    opts = _fa_options(
        head_num,
        input_layout,
        padding_mask=padding_mask,
        prefix=prefix,
        sink=sink,
        actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=actual_seq_kvlen,
        scale=scale_value,
        keep_prob=keep_prob,
        pre_tockens=pre_tockens,
        next_tockens=next_tockens,
        sparse_mode=sparse_mode,
        seed=seed,
        offset=offset,
    )
    q, k, v, p, m = _on_cpu(query, key, value, pse, atten_mask)
    fwd = _forward(q, k, v, p, m, opts)
    d = fwd["q"].shape[-1]
    grads = _backward(fwd, _to_bnsd(dy.cpu(), input_layout, d).float(), opts)
    dq, dk, dv = (
        _dense(_from_bnsd(g, input_layout).to(t.dtype), query)
        for g, t in zip(grads[:3], (query, key, value), strict=True)
    )
    dpse = _dense(grads[3].sum_to_size(pse.shape).to(pse.dtype), query) if pse is not None else query.new_empty((0,))
    return dq, dk, dv, dpse, query.new_empty((0,))


def _fusion_attention_grad_fake(
    query: Any, key: Any, value: Any, dy: Any, head_num: int, input_layout: str, **kwargs: Any
) -> tuple[Any, ...]:
    pse = kwargs.get("pse")
    dpse = pse.new_empty(pse.shape) if pse is not None else query.new_empty((0,))
    return (
        query.new_empty(query.shape),
        key.new_empty(key.shape),
        value.new_empty(value.shape),
        dpse,
        query.new_empty((0,)),
    )


def _fa_setup(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
    query, key, value, head_num, input_layout, *rest = inputs
    named = dict(zip(_FA_ARGS, rest, strict=False))
    ctx.save_for_backward(query, key, value, named.get("pse"), named.get("atten_mask"))
    ctx.head_num, ctx.input_layout = head_num, input_layout
    ctx.options = {name: value for name, value in named.items() if name not in ("pse", "atten_mask", "scale")}
    ctx.options["scale_value"] = named.get("scale", 1.0)
    ctx.seed, ctx.offset, ctx.numels = output[4], output[5], output[6]
    ctx.n_inputs = len(inputs)


def _fa_grad(ctx: Any, dy: Any, *_unused: Any) -> tuple[Any, ...]:
    import torch

    query, key, value, pse, atten_mask = ctx.saved_tensors
    dq, dk, dv, dpse, _ = torch.ops.npu.npu_fusion_attention_grad(
        query,
        key,
        value,
        dy,
        ctx.head_num,
        ctx.input_layout,
        pse=pse,
        atten_mask=atten_mask,
        seed=ctx.seed,
        offset=ctx.offset,
        numels=ctx.numels,
        **ctx.options,
    )
    grads: list[Any] = [dq, dk, dv, None, None, dpse if pse is not None else None]
    return (*grads, *([None] * (ctx.n_inputs - len(grads))))
