"""The one reader of "package.module:Qual.name" strings (compat/targets.py)."""

from __future__ import annotations

import json.decoder

import pytest

from npu_inductor_compat import targets
from npu_inductor_compat.targets import Target, TargetAttributeMissing, TargetModuleMissing


def test_a_target_resolves_like_pkgutil_resolve_name() -> None:
    import pkgutil

    for text in ("json.decoder:JSONDecoder.decode", "json:loads", "json.decoder"):
        assert targets.resolve(text) is pkgutil.resolve_name(text)
    owner, name = Target.parse("json.decoder:JSONDecoder.decode").owner()
    assert (owner, name) == (json.decoder.JSONDecoder, "decode")
    assert str(Target.parse("json:loads")) == "json:loads" and Target.parse("json:a.b").name == "b"


@pytest.mark.parametrize("text", ["json", "json:", ":loads", "json:a..b", ""])
def test_a_malformed_target_is_a_value_error_naming_it_and_the_form(text: str) -> None:
    with pytest.raises(ValueError, match=f"target {text!r} must look like 'package.module:Attribute.path'"):
        Target.parse(text)


def test_a_missing_module_or_name_is_an_error_naming_the_target_and_what_is_missing() -> None:
    with pytest.raises(
        TargetModuleMissing, match=r"target 'no_such_module_x:f': cannot import module 'no_such_module_x'"
    ):
        targets.resolve("no_such_module_x:f")
    with pytest.raises(
        TargetAttributeMissing, match=r"target 'json:JSONDecoder.nope.x': json:JSONDecoder.nope does not"
    ):
        Target.parse("json:JSONDecoder.nope.x").owner()
    assert issubclass(TargetModuleMissing, ImportError) and issubclass(TargetAttributeMissing, AttributeError)
