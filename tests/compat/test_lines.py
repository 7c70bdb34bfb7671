"""One version axis: each version module composes common's shared records with its adapters, and a new torch line is
one folder, one ``LINES`` row and one ``TORCH_LINES`` entry."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import sys
import types
from typing import Any

import pytest
from npu_compat_test_paths import ROOT
from packaging.specifiers import SpecifierSet

from npu_inductor_compat import activation, dispatch, lines, registry
from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.linespec import MalformedLineModule
from npu_inductor_compat.patching import Journal


def _nox_constant(name: str) -> Any:
    """A literal constant of noxfile.py, read without importing nox."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"noxfile.py has no {name}")


def _torch_lines() -> dict[str, str]:
    """noxfile.py's TORCH_LINES."""
    value: dict[str, str] = _nox_constant("TORCH_LINES")
    return value


def test_the_torch_npu_wheel_sessions_are_the_exact_paired_torch_releases() -> None:
    """`nox -s torch_npu_wheel` runs one session per torch release the torch_npu-wheel provider pairs, exactly (the
    torch each stubbed release's metadata requires, not its minor's core line), each of a tested minor; a pair in
    tools/simulated/wheel/wheel_release.py without a session (or the reverse) fails here."""
    from npu_inductor_compat.tools.simulated.wheel import wheel_release

    sessions = _nox_constant("TORCH_NPU_LINES")
    tested_minors = {".".join(torch.split(".")[:2]) for torch in _torch_lines()}
    # (a pair whose torch is no longer supported stays in the tools' data, without a session)
    paired = [torch for torch in wheel_release.PAIRED if ".".join(torch.split(".")[:2]) in tested_minors]
    assert sorted(sessions) == sorted(paired)
    assert {".".join(torch.split(".")[:2]) for torch in sessions} <= tested_minors


def test_every_line_module_composes_the_shared_records_with_its_own_adapters() -> None:
    for line in lines.LINES:
        spec = importlib.import_module(f"npu_inductor_compat.{line.module}").LINE
        assert isinstance(spec.adapters, LineAdapters) and spec.adapters.line == spec.name == line.module
        ids = [record.id for record in spec.fixes]
        assert [record.id for record in compose.shared_fixes(spec.adapters)] == ids[
            : len(compose.shared_fixes(spec.adapters))
        ]
        assert len(ids) == len(set(ids))
        assert registry.line_fixes(line.module) == spec.fixes


def test_torch_lines_and_lines_agree() -> None:
    """Every tested torch release dispatches to the module noxfile.py says, and every module is tested."""
    tested = _torch_lines()
    for torch, module in tested.items():
        assert dispatch.torch_line(torch) == module, torch
    assert {line.module for line in lines.LINES} == set(tested.values())


def test_record_lines_default_to_every_line_of_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_inductor_compat.common.fixes.flex_decoding_split import DECODING_SPLIT_FROM_DEVICE

    assert DECODING_SPLIT_FROM_DEVICE.lines is None
    assert DECODING_SPLIT_FROM_DEVICE.applies_to() == tuple(line.module for line in lines.LINES)
    extra = lines.Line("v9_9", SpecifierSet(">=9.9.0"), "synthetic")
    monkeypatch.setattr(lines, "LINES", (*lines.LINES, extra))
    assert "v9_9" in DECODING_SPLIT_FROM_DEVICE.applies_to()


def _synthetic_line(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A new line the way a contributor adds one: a module composing the shared records with its adapters (here the
    newest line's answers), a LINES row, and nothing else."""
    newest = importlib.import_module(f"npu_inductor_compat.{lines.LINES[-1].module}")
    module = types.ModuleType("npu_inductor_compat.v2_99")
    adapters = dataclasses.replace(newest.ADAPTERS, line="v2_99")
    module.LINE = compose.line_spec(module.__name__, adapters)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    last = dataclasses.replace(lines.LINES[-1], releases=SpecifierSet(f">={lines.LINES[-1].first_text},<2.99.0"))
    monkeypatch.setattr(lines, "LINES", (*lines.LINES[:-1], last, lines.Line("v2_99", SpecifierSet(">=2.99.0"), "x")))
    return module


def test_a_synthetic_line_gets_every_shared_record_and_none_is_skipped_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _synthetic_line(monkeypatch)
    assert dispatch.torch_line("2.99.0") == "v2_99"
    records = registry.fix_records("v2_99")
    shared = {record.id for record in module.LINE.fixes}
    assert shared <= {record.id for record in records}
    journal = Journal()
    for record in records:
        decision = activation._decide(record, "v2_99", frozenset(), journal)
        if record.id in shared:
            assert "v2_99" in record.applies_to()
            # (a record patching torch_npu's code is skipped where that code is absent, saying so)
            absent = decision.status == "skipped" and decision.detail.startswith("nothing to patch:")
            assert decision.status in ("applied", "not needed") or absent, (record.id, decision)
        # another line's own record is judged by its probe on the new line, never "skipped" unjudged
        assert not (decision.status == "skipped" and "written for" in decision.detail), (record.id, decision)


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line (its own record is the example)
def test_a_line_listing_a_record_not_written_for_it_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _synthetic_line(monkeypatch)
    own = importlib.import_module("npu_inductor_compat.v2_7_1.flex").SYMBOLIC_BACKWARD_GRID
    monkeypatch.setattr(module, "LINE", dataclasses.replace(module.LINE, fixes=(*module.LINE.fixes, own)))
    with pytest.raises(registry.RecordDeclarationError, match="v2_99 lists fix 'flex-backward-symbolic-grid'"):
        registry.fix_records("v2_99")


def test_a_line_module_without_a_well_formed_line_is_refused_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading a version module checks its LINE: none, the wrong type or a malformed spec is an error naming the module
    and what is wrong (no longer a line that silently applies no fix)."""
    module = _synthetic_line(monkeypatch)
    good = module.LINE
    monkeypatch.delattr(module, "LINE")
    with pytest.raises(MalformedLineModule, match=r"npu_inductor_compat\.v2_99 declares no LINE; .*compose\.line_spec"):
        registry.line_fixes("v2_99")
    monkeypatch.setattr(module, "LINE", "v2_99", raising=False)  # the old declaration: a name, FIXES beside it
    with pytest.raises(MalformedLineModule, match=r"npu_inductor_compat\.v2_99\.LINE is a str, not a LineSpec"):
        registry.fix_records()
    bad = dataclasses.replace(good, name="v2_98", fixes=(*good.fixes, "flex-fix"))
    monkeypatch.setattr(module, "LINE", bad)
    with pytest.raises(MalformedLineModule) as refused:
        registry.line_fixes("v2_99")
    message = str(refused.value)
    assert message.startswith("npu_inductor_compat.v2_99.LINE: name is 'v2_98', not 'v2_99'; ")
    assert f"fixes[{len(good.fixes)}] is a str, not a Patch" in message


@pytest.mark.filterwarnings("ignore::npu_inductor_compat.dispatch.TorchVersionOverrideWarning")
@pytest.mark.filterwarnings("ignore::npu_inductor_compat.dispatch.UntestedTorchVersionWarning")
def test_dispatch_checks_the_line_it_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _synthetic_line(monkeypatch)
    monkeypatch.setattr(module, "LINE", dataclasses.replace(module.LINE, fixes=list(module.LINE.fixes)))
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_TORCH_VERSION", "2.99.0")
    dispatch._forget_resolution()
    try:
        with pytest.raises(MalformedLineModule, match=r"v2_99\.LINE: fixes is a list, not a tuple of Patch"):
            dispatch.resolve()
    finally:
        dispatch._forget_resolution()


def test_line_adapters_missing_fields_are_named() -> None:
    newest = importlib.import_module(f"npu_inductor_compat.{lines.LINES[-1].module}").LINE.adapters
    partial = types.SimpleNamespace(line="v2_99", new_config_entry=newest.new_config_entry)
    with pytest.raises(MalformedLineModule) as refused:
        compose.line_spec("npu_inductor_compat.v2_99", partial)  # type: ignore[arg-type]
    message = str(refused.value)
    assert message.startswith("npu_inductor_compat.v2_99: adapters are a SimpleNamespace, not a LineAdapters; it lacks")
    lacks = message.split("it lacks ", 1)[1].split(" (", 1)[0].split(", ")
    assert "config_changed" in lacks and "cpp_wrapper_class" in lacks and "new_config_entry" not in lacks
    unset = dataclasses.replace(newest, line="v2_99", config_changed=None)
    with pytest.raises(MalformedLineModule, match=r"v2_99: adapters: config_changed is None, not callable"):
        compose.line_spec("npu_inductor_compat.v2_99", unset)


def test_line_differences_live_in_the_line_modules() -> None:
    """A probe that tells torch lines apart (a COMPAT tag) lives in common only when it distinguishes releases
    inside one line's range; the differences between lines are adapter fields, chosen in the line modules."""
    fields = {field.name for field in dataclasses.fields(LineAdapters)}
    assert {"new_config_entry", "device_to_aten_changes", "two_pass_knows_npu", "cpp_wrapper_class"} <= fields
    distinct = {
        name: {
            importlib.import_module(f"npu_inductor_compat.{line.module}").ADAPTERS.__dict__[name]
            for line in lines.LINES
        }
        for name in (
            "new_config_entry",
            "device_to_aten_known",
            "two_pass_knows_npu",
            "cpp_wrapper_class",
            "template_heuristic_registry",
        )
    }
    assert all(len(answers) >= 2 for answers in distinct.values()), distinct


def test_status_reports_the_line_resolved_not_a_re_read_environment(
    monkeypatch: pytest.MonkeyPatch, fake_provider: Any
) -> None:
    import npu_inductor_compat

    report = npu_inductor_compat.activate()
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_TORCH_VERSION", "2.7.1" if report["line"] != "v2_7_1" else "2.12.1")
    again = npu_inductor_compat.status()
    assert (again["line"], again["line_reason"]) == (report["line"], report["line_reason"])
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_TORCH_VERSION", "not a version")
    assert npu_inductor_compat.status()["line"] == report["line"]  # no ValueError from a changed variable


def test_the_docs_version_lines_table_is_generated_from_lines() -> None:
    doc = (ROOT / "docs" / "fixes.md").read_text()
    block = doc.split(lines.LINES_START, 1)[1].split(lines.LINES_END, 1)[0]
    assert block.strip() == lines.lines_table()


@pytest.mark.parametrize("releases", ["<2.9.0", ">=2.7.1,>=2.8.0", "==2.9.0", ">=2.9.0,<=2.11.9"])
def test_a_line_whose_releases_are_not_a_lower_and_an_upper_bound_is_refused(releases: str) -> None:
    with pytest.raises(ValueError, match=r"v9_9: releases .* must be '>=X.Y.Z' or '>=X.Y.Z,<X.Y.Z'"):
        lines.Line("v9_9", SpecifierSet(releases), "synthetic")


def test_a_line_covers_its_releases_as_its_specifier_says() -> None:
    line = lines.Line("v9_9", SpecifierSet(">=2.9.0,<2.12.0"), "synthetic")
    assert (line.first, line.end, line.first_text, line.span) == ((2, 9, 0), (2, 12, 0), "2.9.0", ">=2.9.0,<2.12.0")
    assert [line.covers(release) for release in ((2, 8, 9), (2, 9, 0), (2, 11, 7), (2, 12, 0))] == [
        False,
        True,
        True,
        False,
    ]
