"""Record torch-npu-flex-lowerings-kept on this line's real torch: its probe on torch's lowering and on a fallback made
as torch_npu 2.9.1's lowering.py makes one, the lowering put back, exact undo, and its define_kernel adapter on a
class with torch_npu 2.9.1's signature and return (scheduling.py NPUTritonScheduling.define_kernel)."""

from __future__ import annotations

from typing import Any

import pytest

from npu_inductor_compat.common.fixes import torch_npu_flex_lowering as record_module
from npu_inductor_compat.patching import Journal


def _record() -> Any:
    import npu_inductor_compat
    from npu_inductor_compat.registry import fix_records

    (found,) = [r for r in fix_records(npu_inductor_compat.torch_line()) if r.id == "torch-npu-flex-lowerings-kept"]
    return found


def _fallback(op: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register for ``op`` what torch_npu's npu_make_fallback registers (register_lowering of fallback_handler),
    put back after the test; the fallback lowering."""
    from torch._inductor.lowering import fallback_handler, lowerings, register_lowering

    monkeypatch.setitem(lowerings, op, lowerings[op])  # restored on teardown
    register_lowering(op, type_promotion_kind=None)(fallback_handler(op, add_to_fallback_set=False))
    return lowerings[op]


@pytest.fixture
def flex_ops() -> tuple[Any, Any]:
    import torch
    from torch._inductor import lowering  # noqa: F401  (registers torch's flex lowerings)

    return torch.ops.higher_order.flex_attention, torch.ops.higher_order.flex_attention_backward


def test_torchs_own_flex_lowerings_need_nothing(flex_ops: Any) -> None:
    from torch._inductor.lowering import lowerings

    assert all(not getattr(lowerings[op], "_is_fallback_handler", False) for op in flex_ops)
    assert _record().upstream_has_fix() is True


def test_a_fallback_is_replaced_by_torchs_lowering_and_undone_exactly(
    flex_ops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch._inductor.lowering import lowerings

    own = {op: lowerings[op] for op in flex_ops}
    fallbacks = {op: _fallback(op, monkeypatch) for op in flex_ops}
    record = _record()
    assert record.upstream_has_fix() is False
    journal = Journal()
    journal.apply([record])
    for op in flex_ops:
        assert lowerings[op] is own[op]  # the very lowering torch's flex module registered
    assert record.upstream_has_fix() is True
    journal.undo()
    assert all(lowerings[op] is fallbacks[op] for op in flex_ops)


class _Scheduling:
    """torch_npu 2.9.1's define_kernel, as written (scheduling.py: requires the hash, returns name and source)."""

    def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any, traced_graph_hash: str) -> Any:
        return f"triton_tem_{traced_graph_hash}", src_code


def test_define_kernel_answers_torchs_template_call_and_leaves_torch_npus_own() -> None:
    adapted = record_module._as_torch_calls_it(_Scheduling.define_kernel)
    scheduling = _Scheduling()
    assert adapted(scheduling, "src", [], None) == "triton_tem_None"  # torch's simd.py call: the name alone
    assert adapted(scheduling, "src", [], None, "abc") == ("triton_tem_abc", "src")  # torch_npu's own call
    assert adapted(scheduling, "src", [], None, traced_graph_hash="h") == ("triton_tem_h", "src")
    with pytest.raises(TypeError):
        _Scheduling.define_kernel(scheduling, "src", [], None)  # type: ignore[call-arg]  # why it is needed
