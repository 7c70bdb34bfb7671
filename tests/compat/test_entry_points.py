"""The tools' commands and fix providers reach `python -m npu_inductor_compat` through entry points, never imports:
what the installed package registers, unknown names, and tools that are not installed."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import tomllib
from npu_compat_test_paths import ROOT

from npu_inductor_compat import entry_points
from npu_inductor_compat.__main__ import main

GROUPS = (entry_points.COMMANDS, entry_points.FIX_PROVIDERS)


def _register(monkeypatch: pytest.MonkeyPatch, group: str, entries: dict[str, str]) -> None:
    """Make ``group`` hold exactly ``entries`` (name -> "module:attr") as the installed metadata would."""
    real = importlib.metadata.entry_points

    def fake(**select: Any) -> Any:
        if select.get("group") != group:
            return real(**select)
        return [importlib.metadata.EntryPoint(name, value, group) for name, value in entries.items()]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)


@pytest.mark.once
def test_the_installed_package_registers_what_pyproject_declares_and_each_loads() -> None:
    """An editable install (nox's) sees the groups as pyproject.toml declares them; each names a tool's callable.
    (The built wheel's entry_points.txt is checked in test_packaging.py.)"""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in GROUPS:
        installed = {entry.name: entry.value for entry in importlib.metadata.entry_points(group=group)}
        assert installed == declared[group], f"reinstall the package: {group} differs from pyproject.toml"
        for name, value in installed.items():
            assert value.startswith("npu_inductor_compat.tools."), f"{name}: only the tools register here"
            assert callable(entry_points.load(group, name, "command"))
    assert entry_points.names(entry_points.COMMANDS) == ["codegen", "diff", "survey"]


@pytest.mark.once
def test_an_unknown_command_is_a_usage_error_naming_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["codgen", "x.py"])
    assert caught.value.code == 2
    assert "error: unknown command 'codgen'; valid: codegen, diff, fixes, survey\n" in capsys.readouterr().err


@pytest.mark.once
def test_with_no_tools_installed_a_tool_command_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(monkeypatch, entry_points.COMMANDS, {})
    with pytest.raises(SystemExit) as caught:
        main(["codegen", "x.py"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "unknown command 'codegen' (valid: fixes): no tools are installed" in err
    assert f"entry point group {entry_points.COMMANDS} is empty" in err and "pip install -e ." in err


@pytest.mark.once
def test_a_registered_command_whose_tools_are_missing_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(monkeypatch, entry_points.COMMANDS, {"codegen": "npu_inductor_compat.no_tools.commands:codegen"})
    assert main(["codegen", "x.py"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("npu_inductor_compat codegen: the command 'codegen' is registered but its tools are not")
    assert "(no module npu_inductor_compat.no_tools)" in err and "pip install -e ." in err


@pytest.mark.once
def test_a_tool_missing_a_dependency_of_its_own_raises_that_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the registered module itself missing is "not installed"; what the tool imports fails as it is."""
    (tmp_path / "npu_compat_fake_tool.py").write_text("import npu_compat_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _register(monkeypatch, entry_points.COMMANDS, {"fake": "npu_compat_fake_tool:run"})
    with pytest.raises(ModuleNotFoundError, match="npu_compat_no_such_dependency") as caught:
        entry_points.load(entry_points.COMMANDS, "fake", "command")
    assert not isinstance(caught.value, entry_points.NotInstalled)
    sys.modules.pop("npu_compat_fake_tool", None)


@pytest.mark.once
def test_fixes_provider_unknown_or_missing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["fixes", "--provider", "torch_npu"])
    assert caught.value.code == 2
    assert "--provider: unknown provider 'torch_npu'; valid: torch_npu-wheel" in capsys.readouterr().err
    _register(monkeypatch, entry_points.FIX_PROVIDERS, {"torch_npu-wheel": "npu_inductor_compat.no_tools.x:run"})
    assert main(["fixes", "--provider", "torch_npu-wheel"]) == 1
    said = "the torch_npu-wheel provider failed: the provider 'torch_npu-wheel' is registered but its tools are not"
    assert said in capsys.readouterr().err


def test_fixes_runs_the_records_inside_the_provider_it_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provider protocol: provider(decide) -> (decide(), what it loaded); the records are decided inside it."""
    calls: list[str] = []

    def provide(decide: Any) -> tuple[Any, str]:
        calls.append("enter")
        result = decide()
        calls.append("exit")
        return result, "fake-torch_npu 9.9"

    monkeypatch.setitem(sys.modules, "npu_compat_fake_provider", types.SimpleNamespace(provide=provide))
    _register(monkeypatch, entry_points.FIX_PROVIDERS, {"fake": "npu_compat_fake_provider:provide"})
    assert main(["fixes", "--json", "--provider", "fake"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert calls == ["enter", "exit"] and printed["torch_npu"] == "fake-torch_npu 9.9"
    assert printed["fixes"] and all(fix["status"] for fix in printed["fixes"])
