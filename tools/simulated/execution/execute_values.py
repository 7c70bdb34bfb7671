"""How `codegen --execute` compares what the generated code computed with what eager computed: torch.testing's
tolerances by dtype, NaN and inf in the same places, shapes, strides and dtypes equal; and which values RNG made."""

from __future__ import annotations

from typing import Any


def copied(value: Any) -> Any:
    """A tensor copied with its strides (as a graph input is laid out), detached; anything else as it is."""
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    with torch.no_grad():
        if torch._debug_has_internal_overlap(value) == 0:  # no element shared: a tensor of its own strides
            copy = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
            return copy.copy_(value.detach())
        # elements share memory (an expanded input, stride 0): its whole storage is copied and viewed the same way
        storage = value.untyped_storage()
        fresh = torch.empty(storage.nbytes(), dtype=torch.uint8, device=value.device)
        fresh.copy_(torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage))
        view = torch.empty(0, dtype=value.dtype, device=value.device)
        return view.set_(fresh.untyped_storage(), value.storage_offset(), value.size(), value.stride())


def difference(expected: Any, actual: Any, *, strides: bool = True) -> dict[str, Any] | None:
    """None when ``actual`` agrees with ``expected``; else what differs: ``problem`` (a sentence) and, for values,
    ``max_abs`` / ``max_rel`` error and how many elements are outside the tolerance."""
    import torch

    if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
        if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
            return {"problem": f"expected {type(expected).__name__}, got {type(actual).__name__}"}
        if _scalar_equal(expected, actual):
            return None
        return {"problem": f"expected {expected!r}, got {actual!r}"}
    if expected.shape != actual.shape:
        return {"problem": f"shape {tuple(actual.shape)}, eager's is {tuple(expected.shape)}"}
    if expected.dtype != actual.dtype:
        return {"problem": f"dtype {actual.dtype}, eager's is {expected.dtype}"}
    if strides and expected.numel() > 1 and not _same_strides(expected, actual):
        return {"problem": f"strides {actual.stride()}, eager's are {expected.stride()}"}
    want = expected.detach().cpu()
    got = actual.detach().cpu()
    if want.dtype.is_complex:
        want, got = torch.view_as_real(want), torch.view_as_real(got)
    if not (want.dtype.is_floating_point or want.dtype.is_complex):
        wrong = int((want != got).sum())
        if wrong == 0:
            return None
        return {"problem": f"{wrong} of {want.numel()} element(s) differ", "elements": wrong, **_errors(want, got)}
    want, got = want.to(torch.float64), got.to(torch.float64)
    for name, test in (("NaN", torch.isnan), ("inf", torch.isinf)):
        where = test(want) != test(got)
        if where.any():
            return {
                "problem": f"{name} in {int(where.sum())} other place(s) than eager's",
                "elements": int(where.sum()),
            }
    rtol, atol = _tolerances(expected.dtype)
    finite = torch.isfinite(want)
    same_inf = ~finite & (want == got)
    outside = ~(torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True) | same_inf)
    if not outside.any():
        return None
    count = int(outside.sum())
    return {
        "problem": f"{count} of {want.numel()} element(s) outside rtol {rtol:g}, atol {atol:g}",
        "elements": count,
        **_errors(want.masked_fill(~finite, 0), got.masked_fill(~finite, 0)),
    }


def _tolerances(dtype: Any) -> tuple[float, float]:
    """torch.testing.assert_close's default (rtol, atol) for ``dtype`` (torch/testing/_comparison.py)."""
    from torch.testing._comparison import default_tolerances

    rtol, atol = default_tolerances(dtype)
    return float(rtol), float(atol)


def _errors(want: Any, got: Any) -> dict[str, float]:
    import torch

    gap = (got.to(torch.float64) - want.to(torch.float64)).abs()
    scale = want.to(torch.float64).abs()
    relative = torch.where(scale > 0, gap / scale.clamp_min(1e-300), torch.where(gap > 0, float("inf"), 0.0))
    return {
        "max_abs": float(gap.max()) if gap.numel() else 0.0,
        "max_rel": float(relative.max()) if gap.numel() else 0.0,
    }


def _same_strides(expected: Any, actual: Any) -> bool:
    """Strides that matter: a dimension of size 1 may have any stride (as torch's own stride checks allow)."""
    return all(
        size == 1 or want == got
        for size, want, got in zip(expected.shape, expected.stride(), actual.stride(), strict=True)
    )


def _scalar_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float) and isinstance(actual, float) and expected != expected:
        return actual != actual
    try:
        return bool(expected == actual)
    except Exception:
        return expected is actual


# ----------------------------------------------------------------------------------------------------- randomness
# Op names that mean RNG where an op carries no nondeterministic_seeded tag: Inductor's seed and random prims, and
# torch_npu's (npu._npu_dropout, npu_dropout_gen_mask, ...: torch_npu's yaml gives them no tag). One that only looks
# random is left uncompared, never compared against a value it could not reproduce.
RANDOM_WORDS = ("dropout", "bernoulli", "rand", "seed", "philox", "gen_mask", "multinomial", "normal", "uniform")


def random_nodes(graph: Any) -> set[str]:
    """The names of the FX graph's nodes whose value depends on RNG: random ops (tagged nondeterministic_seeded, or
    named as RANDOM_WORDS says), and every node computed from one."""
    import torch

    tainted: set[str] = set()
    for node in graph.nodes:
        target = node.target
        seeded = torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())
        name = str(target).rpartition("::")[2] if node.op == "call_function" else ""
        own = any(word in name.lower() for word in RANDOM_WORDS)
        if seeded or own or any(getattr(arg, "name", None) in tainted for arg in node.all_input_nodes):
            tainted.add(node.name)
    return tainted


def output_nodes(graph: Any) -> list[Any]:
    """The graph's outputs, in order: each the FX node it returns, or the constant."""
    for node in graph.nodes:
        if node.op == "output":
            values = node.args[0]
            return list(values) if isinstance(values, list | tuple) else [values]
    return []
