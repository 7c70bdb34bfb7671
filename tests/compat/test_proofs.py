"""Every fix record names the tests that run its patched path (``proven_by``), which the matrices' "applied" stands
on: each named test exists, runs on every line (not `once`), and its file is about that record. Read as text; that the
named tests pass on each line is what the tiers and `nox -s torch_npu_wheel` show."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import matrix
import pytest
from npu_compat_test_paths import ROOT

from npu_inductor_compat.patching import Patch
from npu_inductor_compat.registry import fix_records

pytestmark = pytest.mark.once


def _fix_records() -> list[Patch]:
    return [record for record in fix_records() if record.layer == "fix"]


def _names_in_modules(record: Patch) -> set[str]:
    """The module-level names bound to ``record`` in the package's loaded modules (the constants tests import)."""
    found = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("npu_inductor_compat") and module is not None:
            found |= {attr for attr, value in vars(module).items() if value is record and attr.isupper()}
    return found


def _test_function(path: Path, name: str) -> ast.FunctionDef | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _marked_once(path: Path, function: ast.FunctionDef) -> bool:
    module_once = "pytestmark = pytest.mark.once" in path.read_text()
    return module_once or any(ast.unparse(mark).endswith("mark.once") for mark in function.decorator_list)


@pytest.mark.parametrize("record", _fix_records(), ids=lambda record: record.id)
def test_each_fix_record_names_existing_per_line_tests_about_it(record: Patch) -> None:
    assert record.proven_by, f"{record.id}: no test named (proven_by); the matrix says 'applied (untested)'"
    mentions = {record.id, *_names_in_modules(record)}
    for node_id in record.proven_by:
        file, _, name = node_id.partition("::")
        path = ROOT / file
        assert path.is_file() and name, f"{record.id}: {node_id!r} is no tests/FILE.py::test_name"
        function = _test_function(path, name)
        assert function is not None, f"{record.id}: {file} has no {name}"
        assert not _marked_once(path, function), f"{record.id}: {node_id} runs on one line only (once)"
        text = path.read_text()
        assert any(mention in text for mention in mentions), f"{record.id}: {file} never names it ({mentions})"


def test_an_applied_record_without_a_proof_is_rendered_untested() -> None:
    assert matrix.cell({"status": "applied", "proven_by": []}) == "applied (untested)"
    assert matrix.cell({"status": "applied", "proven_by": ["tests/test_x.py::test_y"]}) == "applied"
    assert matrix.cell({"status": "applied"}) == "applied"  # a result written before proofs were recorded
    assert matrix.cell({"status": "not needed", "proven_by": []}) == "not needed"
