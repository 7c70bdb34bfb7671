"""The fix-by-line matrix: rendering, the missing-fix exit code, and the README's copy kept true on every line."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import matrix
import pytest
from npu_compat_test_paths import ROOT

import npu_inductor_compat
from npu_inductor_compat.__main__ import fix_rows
from npu_inductor_compat.registry import fix_records


def noxfile_torch_lines() -> dict[str, str]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if getattr(target, "id", "") == "TORCH_LINES":
            value: dict[str, str] = ast.literal_eval(node.value)  # type: ignore[union-attr]
            return value
    raise AssertionError("noxfile.py has no TORCH_LINES")


def result(torch: str, line: str, statuses: dict[str, str]) -> dict[str, Any]:
    return {"torch": torch, "line": line, "fixes": [{"id": k, "status": v} for k, v in statuses.items()]}


def test_render_orders_columns_by_release_and_parses_back() -> None:
    results = [
        result("2.12.1+cu130", "v2_12", {"a": "applied", "b": "not needed"}),
        result("2.7.1", "v2_7_1", {"a": "not needed", "b": "applied"}),
    ]
    table = matrix.render(results)
    assert table.splitlines()[0] == "| fix | torch 2.7.1 (v2_7_1) | torch 2.12.1 (v2_12) |"
    assert matrix.parse(table) == {
        "torch 2.7.1 (v2_7_1)": {"a": "not needed", "b": "applied"},
        "torch 2.12.1 (v2_12)": {"a": "applied", "b": "not needed"},
    }


def test_a_result_with_torch_npus_code_loaded_names_its_release_in_the_column() -> None:
    with_npu = {**result("2.7.1", "v2_7_1", {"a": "applied"}), "torch_npu": "2.7.1.post11"}
    table = matrix.parse(matrix.render([with_npu]))
    assert table == {"torch 2.7.1 + torch_npu 2.7.1.post11 (v2_7_1)": {"a": "applied"}}
    readme = f"x\n{matrix.TORCH_NPU_START}\n{matrix.render([with_npu])}\n{matrix.TORCH_NPU_END}\n"
    assert matrix.parse(matrix.embedded(readme, matrix.TORCH_NPU_START, matrix.TORCH_NPU_END)) == table
    with pytest.raises(ValueError, match="no <!-- fixes-matrix:start -->"):
        matrix.embedded(readme)


def test_a_missing_fix_fails_the_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(result("2.7.1", "v2_7_1", {"a": "applied"})))
    bad.write_text(json.dumps(result("2.9.1", "v2_9", {"a": "missing"})))
    assert matrix.main([str(good), "--out", str(tmp_path / "m.md")]) == 0
    assert matrix.main([str(good), str(bad)]) == 1
    assert "a missing on torch 2.9.1" in capsys.readouterr().err


def test_a_record_skipped_because_it_is_not_written_for_a_line_fails_the_matrix(tmp_path: Path) -> None:
    """A record that does not apply to a line and has no probe leaves that line unjudged: the matrix fails."""
    good = result("2.7.1", "v2_7_1", {"a": "applied"})
    bad = result("2.15.0", "v2_15", {"a": "skipped"})
    bad["fixes"][0]["detail"] = "written for v2_7_1; not for v2_15"
    disabled = result("2.9.1", "v2_9", {"a": "skipped"})
    disabled["fixes"][0]["detail"] = "disabled by NPU_INDUCTOR_COMPAT_DISABLE"
    assert matrix.problem_cells([good, disabled]) == []
    assert matrix.problem_cells([good, bad]) == ["a skipped on torch 2.15.0 (written for v2_7_1; not for v2_15)"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert matrix.main([str(path)]) == 1


def test_readme_matrix_has_every_record_and_line_and_this_lines_statuses_are_true() -> None:
    import torch

    table = matrix.parse(matrix.embedded((ROOT / "README.md").read_text()))
    lines = noxfile_torch_lines()
    assert list(table) == [f"torch {version} ({line})" for version, line in lines.items()]
    ids = {record.id for record in fix_records()}
    for column in table.values():
        assert set(column) == ids
    here = f"torch {torch.__version__.split('+')[0]} ({npu_inductor_compat.torch_line()})"
    assert here in table, f"{here} is not a column: run `nox -s matrix` and update README.md"
    actual = {fix["id"]: matrix.cell(fix) for fix in fix_rows(npu_inductor_compat.activate())}
    assert table[here] == actual, "README's matrix is stale: run `nox -s matrix` and paste fixes_matrix.md"
