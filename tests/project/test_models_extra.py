"""The library models outside the corpus (examples/models_extra/) stay Ascend style and random init, and the table
in docs/codegen.md lists exactly them. Static (a `corpus` test in tests/project/test_models.py runs them and checks the
table's numbers on torch 2.12)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from npu_compat_test_paths import ROOT

EXTRA = ROOT / "examples" / "models_extra"
SCRIPTS = sorted(EXTRA.glob("*.py"))

pytestmark = pytest.mark.once


def calls(tree: ast.AST) -> set[str]:
    """The dotted names every call in ``tree`` calls (``model.npu()`` -> ``npu``, ``torch.compile(m)`` ->
    ``torch.compile``; a method on a call's result gives its attribute name alone)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            names.add(node.func.attr)
            if isinstance(node.func.value, ast.Name):
                names.add(f"{node.func.value.id}.{node.func.attr}")
    return names


def imports(tree: ast.AST) -> set[str]:
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


def test_the_folder_holds_models() -> None:
    assert len(SCRIPTS) >= 3, f"{EXTRA}: expected the library models outside the corpus"


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_each_model_is_written_as_on_ascend_with_a_training_step_and_random_init(script: Path) -> None:
    tree = ast.parse(script.read_text(), filename=str(script))
    assert "torch_npu" in imports(tree), f"{script.name}: does not import torch_npu as an Ascend script does"
    called = calls(tree)
    missing = {"npu", "torch.compile", "backward", "step"} - called
    assert not missing, f"{script.name}: never calls {sorted(missing)} (a compiled forward and a training step on npu)"
    assert "from_pretrained" not in called, f"{script.name}: downloads weights; random init only"


def test_the_docs_table_lists_exactly_the_models_in_the_folder() -> None:
    docs = (ROOT / "docs" / "codegen.md").read_text()
    section = docs[docs.index("**Library models outside the corpus.**") :]
    table = section[: section.index("\n\n", section.index("| model |"))]
    listed = re.findall(r"^\| (\w+) \|", table, flags=re.MULTILINE)
    assert sorted(name for name in listed if name != "model") == [script.stem for script in SCRIPTS]
