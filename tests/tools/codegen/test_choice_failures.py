"""A template whose every choice failed to compile: the graph's error names the first failed choice of that template
and why (upstream's select_algorithm logs it only at debug level). The observer on torch's real benchmark request
class; the explanation on errors as the capture records them."""

from __future__ import annotations

from typing import Any

import pytest

from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.codegen import choice_failures

NO_CHOICES = (
    "NoValidChoicesError: No compilable choices found for flex_attention in no-benchmark mode.\n"
    "  target: flex_attention"
)


def test_the_first_failed_choice_of_the_named_template_goes_into_the_first_line() -> None:
    error = {"type": "LoweringException", "message": NO_CHOICES}
    failures = [
        {"choice": "triton_flex_decoding_0", "error": "ModuleNotFoundError: decoding's"},
        {"choice": "triton_flex_attention_7", "error": "NoTritonConfigsError: No valid triton configs.\nStack"},
        {"choice": "triton_flex_attention_8", "error": "NoTritonConfigsError: second"},
    ]
    choice_failures.explain(error, failures)
    head = error["message"].splitlines()[0]
    assert "2 choice(s) failed to compile; the first, triton_flex_attention_7" in head
    assert "No valid triton configs." in head and "Stack" not in head and "decoding" not in head
    assert error["message"].splitlines()[1] == "  target: flex_attention"
    assert [failure["choice"] for failure in error["choice_failures"]] == [
        "triton_flex_attention_7",
        "triton_flex_attention_8",
    ]


def test_other_errors_and_no_failures_are_left_as_they_are() -> None:
    other = {"type": "LoweringException", "message": "AttributeError: 'Subgraph' object has no attribute 'dtype'"}
    choice_failures.explain(other, [{"choice": "triton_flex_attention_0", "error": "x"}])
    assert other == {
        "type": "LoweringException",
        "message": "AttributeError: 'Subgraph' object has no attribute 'dtype'",
    }
    bare = {"type": "LoweringException", "message": NO_CHOICES}
    choice_failures.explain(bare, [])
    assert bare["message"] == NO_CHOICES and "choice_failures" not in bare


def test_the_observer_keeps_a_failed_precompile_and_reraises_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor.select_algorithm import TritonTemplateCaller

    def failing(self: Any) -> None:
        raise RuntimeError("triton-ascend refused it")

    monkeypatch.setattr(TritonTemplateCaller, "precompile", failing)
    kept: list[dict[str, str]] = []
    journal = Journal()
    journal.apply([choice_failures.observer(lambda: kept)])
    try:
        choice = TritonTemplateCaller.__new__(TritonTemplateCaller)
        choice.name = "triton_flex_attention_3"
        with pytest.raises(RuntimeError, match="refused it"):
            choice.precompile()
    finally:
        journal.undo()
    assert kept == [{"choice": "triton_flex_attention_3", "error": "RuntimeError: triton-ascend refused it"}]
    assert TritonTemplateCaller.precompile is failing
