"""The commit-msg check (.ci/commit_msg.py): a subject of at most 72 characters, wired into pre-commit."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from npu_compat_test_paths import ROOT

pytestmark = pytest.mark.once  # text only: nothing here depends on torch's Inductor


def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("npu_compat_commit_msg", ROOT / ".ci" / "commit_msg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_subject_over_72_characters_is_refused_naming_its_length(tmp_path: Path) -> None:
    check = checker()
    assert check.problem("x" * 72 + "\n\nA body line may be longer than the subject: " + "y" * 100) is None
    assert "73 characters, at most 72" in (check.problem("x" * 73) or "")
    assert check.problem("# Please enter the commit message\n\n") == "the commit message is empty"
    assert check.subject("# git's template\n\nSubject\nbody") == "Subject"
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("y" * 80 + "\n")
    assert check.main([str(message)]) == 1
    message.write_text("A short subject\n\nwhy\n")
    assert check.main([str(message)]) == 0


def test_pre_commit_runs_it_at_the_commit_msg_stage() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert "commit-msg" in config["default_install_hook_types"]
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    (subject,) = [hook for hook in hooks if hook["id"] == "commit-subject-length"]
    assert subject["entry"] == "python3 .ci/commit_msg.py" and subject["stages"] == ["commit-msg"]
