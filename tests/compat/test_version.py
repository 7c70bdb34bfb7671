"""The version oracle and the dispatcher on many version strings: old, new, odd and malformed."""

from __future__ import annotations

import itertools
import logging
import warnings

import pytest
from npu_compat_test_paths import ROOT

import npu_inductor_compat
from npu_inductor_compat import dispatch, lines, version
from npu_inductor_compat.dispatch import (
    TorchVersionOverrideWarning,
    UnsupportedTorchVersion,
    UntestedTorchVersionWarning,
)

SUPPORTED = [
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.1", "v2_7_1", (2, 7, 1)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.1+cpu", "v2_7_1", (2, 7, 1)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.1a0", "v2_7_1", (2, 7, 1)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.1+cu126", "v2_7_1", (2, 7, 1)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.1.post1", "v2_7_1", (2, 7, 1)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.7.2rc1", "v2_7_1", (2, 7, 2)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.8", "v2_7_1", (2, 8, 0)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.8.0", "v2_7_1", (2, 8, 0)),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
    ("2.8.0a0+gitdeadbee", "v2_7_1", (2, 8, 0)),
    ("2.9.0a0+git1234abc", "v2_9", (2, 9, 0)),
    ("2.9.0", "v2_9", (2, 9, 0)),
    ("2.9.1", "v2_9", (2, 9, 1)),
    (" 2.9.1 ", "v2_9", (2, 9, 1)),
    ("2.10.0", "v2_9", (2, 10, 0)),
    ("2.11.0+cu128", "v2_9", (2, 11, 0)),
    ("2.11.99", "v2_9", (2, 11, 99)),
    ("2.12.0.dev20260101", "v2_12", (2, 12, 0)),
    ("2.12.0", "v2_12", (2, 12, 0)),
    ("2.12.1", "v2_12", (2, 12, 1)),
    ("2.12.1+cu130", "v2_12", (2, 12, 1)),
    ("2.13.0+cu130", "v2_12", (2, 13, 0)),
    ("2.15.0", "v2_15", (2, 15, 0)),
]
UNTESTED = [
    ("2.16.0+cu130", (2, 16, 0)),
    ("2.17.0", (2, 17, 0)),
    ("3.0.0", (3, 0, 0)),
    ("2.16.0.dev20270101", (2, 16, 0)),
]
TOO_OLD = ["2.7.0", "2.7.0+cpu", "2.6.0+cpu", "2.0", "1.13.1", "0.4"]
MALFORMED = ["", "   ", "two.nine", "2.9.x", "latest", "2.9.1-beta-nonsense!", "2..9", "1!2.9.1"]


@pytest.mark.parametrize(("text", "line", "release"), SUPPORTED)
def test_supported_versions_map_to_their_line(text: str, line: str, release: tuple[int, int, int]) -> None:
    assert version.parse_release(text) == release
    assert npu_inductor_compat.torch_line(text) == line
    choice = dispatch.choose_line(text)
    assert not choice.untested
    assert choice.version.release == release
    if text.strip() != ".".join(map(str, release)):
        assert "treated as release" in choice.reason


def test_dev_build_policy_is_stated_in_the_reason() -> None:
    choice = dispatch.choose_line("2.9.0a0+git1234abc")
    assert "'2.9.0a0+git1234abc' treated as release 2.9.0" in choice.reason


@pytest.mark.parametrize(("text", "release"), UNTESTED)
@pytest.mark.filterwarnings("ignore::npu_inductor_compat.dispatch.TorchVersionOverrideWarning")
def test_newer_than_tested_uses_newest_module_and_warns_at_resolve(
    text: str, release: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    choice = dispatch.choose_line(text)
    assert choice.line.module == lines.LINES[-1].module == "v2_15"
    assert choice.untested and "untested" in choice.reason
    monkeypatch.setenv(version.TORCH_VERSION_ENV, text)
    with pytest.warns(UntestedTorchVersionWarning, match="newer than the newest tested"):
        _, spec = dispatch.resolve()
    assert spec.name == "v2_15"
    # resolved once: no second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dispatch.resolve()


@pytest.mark.parametrize("text", [text for text, _ in UNTESTED])
def test_strict_mode_refuses_untested(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dispatch.STRICT_ENV, "1")
    with pytest.raises(UnsupportedTorchVersion, match="NPU_INDUCTOR_COMPAT_STRICT=1"):
        npu_inductor_compat.torch_line(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("2.12.1", "v2_12"),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line
        ("2.7.1", "v2_7_1"),
    ],
)
@pytest.mark.once
def test_a_bad_strict_value_is_refused_on_a_tested_torch_too(
    text: str, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(dispatch.STRICT_ENV, "maybe")
    with pytest.raises(ValueError, match=r"NPU_INDUCTOR_COMPAT_STRICT='maybe': expected 1/0 \(or true/false"):
        npu_inductor_compat.torch_line(text)
    monkeypatch.setenv(dispatch.STRICT_ENV, "1")
    assert npu_inductor_compat.torch_line(text) == line


def test_strict_mode_value_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dispatch.STRICT_ENV, "maybe")
    with pytest.raises(ValueError, match="NPU_INDUCTOR_COMPAT_STRICT='maybe'"):
        npu_inductor_compat.torch_line("2.16.0")
    monkeypatch.setenv(dispatch.STRICT_ENV, "0")
    assert npu_inductor_compat.torch_line("2.16.0") == "v2_15"


@pytest.mark.parametrize("text", TOO_OLD)
def test_too_old_is_an_import_error_listing_the_lines(text: str) -> None:
    with pytest.raises(UnsupportedTorchVersion) as caught:
        npu_inductor_compat.torch_line(text)
    assert isinstance(caught.value, ImportError)
    message = str(caught.value)
    assert text in message and all(line.module in message for line in lines.LINES)


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_is_a_value_error_quoting_the_string(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        npu_inductor_compat.torch_line(text)
    assert repr(text) in str(caught.value)
    assert "InvalidVersion" not in type(caught.value).__name__


def test_non_string_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        version.parse_release(2.9)  # type: ignore[arg-type]


def test_env_override_wins_and_bad_override_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(version.TORCH_VERSION_ENV, "2.9.1")
    found = version.torch_version()
    assert found.release == (2, 9, 1) and found.source == version.TORCH_VERSION_ENV
    assert npu_inductor_compat.torch_line() == "v2_9"
    monkeypatch.setenv(version.TORCH_VERSION_ENV, "nine")
    with pytest.raises(ValueError, match="NPU_INDUCTOR_COMPAT_TORCH_VERSION.*'nine'"):
        npu_inductor_compat.torch_line()


def _another_release() -> str:
    """A supported release other than the installed torch's."""
    import torch

    installed = version.parse_release(torch.__version__)
    oldest = lines.LINES[0].first_text
    return next(text for text in (oldest, "2.12.1") if version.parse_release(text) != installed)


def _a_release_of_another_line() -> str:
    """The first release of a supported line other than the installed torch's (on 2.8.0 the oldest release, 2.7.1,
    is the same line)."""
    import torch

    own = dispatch.choose_line(torch.__version__).line
    return next(line.first_text for line in lines.LINES if line.module != own.module)


def test_an_override_naming_another_release_warns_once_naming_both_and_the_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import torch

    other = _another_release()
    chosen, own = dispatch.torch_line(other), dispatch.torch_line(torch.__version__)
    monkeypatch.setenv(version.TORCH_VERSION_ENV, other)
    with (
        caplog.at_level(logging.WARNING, logger="npu_inductor_compat"),
        pytest.warns(TorchVersionOverrideWarning) as seen,
    ):
        choice, spec = dispatch.resolve()
    assert spec.name == chosen
    message = str(seen[0].message)
    assert f"{version.TORCH_VERSION_ENV}={other} differs from the installed torch {torch.__version__}" in message
    assert f"dispatching to {chosen} as the variable says" in message
    assert (f"not {own}, the installed torch's line" in message) is (own != chosen)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"npu_inductor_compat: {message.split(': ', 1)[1]}"
    ]
    assert f"the installed torch is {torch.__version__}" in choice.reason
    with warnings.catch_warnings():  # resolved once: no second warning
        warnings.simplefilter("error")
        dispatch.resolve()
    assert npu_inductor_compat.status()["torch_override"] == {
        "variable": version.TORCH_VERSION_ENV,
        "value": other,
        "installed": torch.__version__,
        "differs": True,
        "warning": message.split(": ", 1)[1],
    }


@pytest.mark.filterwarnings("ignore::npu_inductor_compat.dispatch.TorchVersionOverrideWarning")
def test_an_override_choosing_another_line_is_refused_at_activate_before_anything_is_applied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2.7.1's records on torch 2.12.1 stopped half-way (TypeError: _ConfigEntry.__init__() missing 'name')."""
    import torch
    import torch._inductor.config as inductor_config

    other = _a_release_of_another_line()
    chosen, own = dispatch.choose_line(other).line, dispatch.choose_line(torch.__version__).line
    assert chosen is not own
    before = dict(inductor_config._config)
    monkeypatch.setenv(version.TORCH_VERSION_ENV, other)
    with pytest.raises(UnsupportedTorchVersion) as refused:
        npu_inductor_compat.activate()
    assert str(refused.value) == (
        f"{version.TORCH_VERSION_ENV}={other} chooses {chosen.module} (torch {chosen.span}), which does not fit the "
        f"installed torch {torch.__version__} ({own.module}, torch {own.span}); nothing applied. Valid: a version "
        f"in {own.span} (another build or release of the installed torch's line), or unset it"
    )
    assert dict(inductor_config._config) == before
    assert npu_inductor_compat.status()["applied"] == [] and not npu_inductor_compat.status()["active"]


def test_an_override_of_the_installed_release_as_another_build_does_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    release = version.parse_release(torch.__version__)
    same = ".".join(map(str, release)) + ("+npu" if "+" in torch.__version__ else "+cpu")  # 2.7.1+cpu is 2.7.1
    monkeypatch.setenv(version.TORCH_VERSION_ENV, same)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        choice, _ = dispatch.resolve()
    assert choice.override_warning is None and "installed torch" not in choice.reason
    assert npu_inductor_compat.status()["torch_override"] == {
        "variable": version.TORCH_VERSION_ENV,
        "value": same,
        "installed": torch.__version__,
        "differs": False,
        "warning": None,
    }


def test_without_an_override_status_shows_none() -> None:
    assert npu_inductor_compat.status()["torch_override"] is None
    assert npu_inductor_compat.TorchVersionOverrideWarning is TorchVersionOverrideWarning
    assert issubclass(TorchVersionOverrideWarning, UserWarning)


def test_installed_torch_is_detected() -> None:
    import torch

    found = version.torch_version()
    assert found.text == torch.__version__
    assert found.release == version.parse_release(torch.__version__)
    assert version.installed_versions()["torch"] == torch.__version__


def test_lines_are_contiguous_and_cover_everything_from_the_oldest() -> None:
    table = lines.LINES
    for before, after in itertools.pairwise(table):
        assert before.end == after.first
    assert table[-1].end is None


def test_newest_tested_matches_the_noxfile_matrix() -> None:
    """The warning threshold must follow the torch lines nox actually tests."""
    import ast

    noxfile = ROOT / "noxfile.py"
    tree = ast.parse(noxfile.read_text())
    tested = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and getattr(node.targets[0] if isinstance(node, ast.Assign) else node.target, "id", "") == "TORCH_LINES"
    )
    newest = max(version.parse_release(v)[:2] for v in tested)
    assert newest == lines.NEWEST_TESTED
