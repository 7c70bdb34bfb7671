"""A record's replacement must take every call the function it replaces takes, as installed: the checker on crafted
signatures, the journal refusing a misfit (nothing applied), and activation reporting a real record "refused" when
torch's function gains a parameter, as torch 2.13 did to use_two_step_variance."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import npu_inductor_compat
from npu_inductor_compat.patching import Change, Journal, Patch, ReplacementRefused, wraps_original
from npu_inductor_compat.signatures import incompatibility, replacement_refusal


def _reason(original: Callable[..., Any], replacement: Callable[..., Any]) -> str | None:
    return incompatibility(inspect.signature(original), inspect.signature(replacement, follow_wrapped=False))


def test_a_wrapper_forwarding_args_and_kwargs_fits_any_original() -> None:
    def original(x: Any, axis: Any, keepdim: Any, input_dtype: Any = None, *, flag: bool = False) -> None: ...
    def wrapper(x: Any, *args: Any, **kwargs: Any) -> None: ...

    assert _reason(original, wrapper) is None


@pytest.mark.parametrize(
    ("replacement", "named"),
    [
        (lambda x, axis, keepdim: None, "'input_dtype' (position 4) is missing"),
        (lambda x, axis, keepdim, dtype: None, "'input_dtype' (position 4) is called 'dtype'"),
        (lambda x, axis, keepdim, input_dtype, extra: None, "requires 'extra'"),
    ],
)
def test_a_wrapper_written_for_three_arguments_names_the_fourth(replacement: Any, named: str) -> None:
    def original(x: Any, axis: Any, keepdim: Any, input_dtype: Any) -> None: ...

    reason = _reason(original, replacement)
    assert reason is not None and named in reason


def test_defaults_keywords_and_star_parameters_are_checked() -> None:
    def with_default(self: Any, var: Any, size: Any, check: bool = True) -> None: ...
    def keyword_only(a: Any, *, mode: str = "x") -> None: ...
    def star(*args: Any, **kwargs: Any) -> None: ...

    reason = _reason(with_default, lambda self, var, size, check: None)
    assert reason is not None and "'check' has a default" in reason
    reason = _reason(keyword_only, lambda a: None)
    assert reason is not None and "'mode' is missing" in reason
    assert _reason(keyword_only, lambda a, **kwargs: None) is None
    reason = _reason(star, lambda *args: None)
    assert reason is not None and "**kwargs" in reason
    reason = _reason(star, lambda node, *args, **kwargs: None)
    assert reason is not None and "requires 'node'" in reason


def test_the_replacement_is_read_as_written_not_through_its_wrapped_original() -> None:
    def original(x: Any, y: Any) -> None: ...

    @wraps_original(original)
    def narrower(x: Any) -> None: ...

    # inspect.signature would follow __wrapped__ and compare the original with itself
    assert inspect.signature(narrower) == inspect.signature(original)
    reason = replacement_refusal(original, narrower)
    assert reason is not None and "'y'" in reason and "(x: 'Any')" in reason
    assert replacement_refusal(original, original) is None
    assert replacement_refusal([], lambda: None) is None  # not a function: nothing to compare
    assert replacement_refusal(staticmethod(original), staticmethod(lambda x, y: None)) is None


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    import sys

    fake = types.ModuleType("npu_compat_test_signature_target")

    def use_two_step_variance(x: Any, axis: Any, keepdim: Any, input_dtype: Any) -> bool:
        return False

    fake.use_two_step_variance = use_two_step_variance  # type: ignore[attr-defined]
    sys.modules[fake.__name__] = fake
    yield fake
    del sys.modules[fake.__name__]


def _narrow(original: Any) -> Any:
    @wraps_original(original)
    def use_two_step_variance(x: Any, axis: Any, keepdim: Any) -> bool:
        return True

    return use_two_step_variance


def test_the_journal_refuses_a_misfit_naming_record_target_and_parameter(module: types.ModuleType) -> None:
    original = module.use_two_step_variance
    fits = Patch("fits", "w", "u", "r", (Change(f"{module.__name__}:use_two_step_variance", lambda old: old),))
    misfit = Patch("misfit", "w", "u", "r", (Change(f"{module.__name__}:use_two_step_variance", _narrow),))
    journal = Journal()
    with pytest.raises(ReplacementRefused) as raised:
        journal.apply([fits, misfit])
    assert (raised.value.patch_id, raised.value.target) == ("misfit", f"{module.__name__}:use_two_step_variance")
    assert "'input_dtype'" in str(raised.value) and "'misfit'" in str(raised.value)
    assert journal.applied() == [] and module.use_two_step_variance is original  # all or nothing


def test_a_real_record_is_refused_when_torch_gains_a_parameter_and_the_rest_apply(
    fake_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """npu-index-wrap-as-shift wraps CSEProxy.indirect_indexing with upstream's parameters written out: give the
    installed method one more, as an upstream release would, and that record alone is refused."""
    from torch._inductor.codegen.common import CSEProxy

    installed = CSEProxy.__dict__["indirect_indexing"]

    def indirect_indexing(self: Any, var: Any, size: Any, check: bool = True, wrap_neg: bool = True, *, bounds=None):  # type: ignore[no-untyped-def]
        return installed(self, var, size, check, wrap_neg)

    monkeypatch.setattr(CSEProxy, "indirect_indexing", indirect_indexing)
    report = npu_inductor_compat.activate()
    fixes = {fix["id"]: fix for fix in report["fixes"]}
    refused = fixes["npu-index-wrap-as-shift"]
    assert refused["status"] == "refused"
    assert "CSEProxy.indirect_indexing" in refused["detail"] and "'bounds'" in refused["detail"]
    assert CSEProxy.__dict__["indirect_indexing"] is indirect_indexing  # not wrapped
    assert fixes["npu-variance-two-step"]["status"] == "applied"  # the others still apply
    assert "npu-index-wrap-as-shift" not in {patch["id"] for patch in report["applied"]}
