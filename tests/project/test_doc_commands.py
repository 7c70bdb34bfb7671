"""Every `python -m npu_inductor_compat` command in the bash blocks of the README and docs/codegen.md, run as written
(the default provider unless the command names one), in a scratch folder with the examples beside it, on this line:
each exits as its text says. Not proven here: what the runs generate (the tests of each feature check that)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from npu_compat_test_paths import ROOT

DOCS = ("README.md", "docs/codegen.md")
PREFIX = "python -m npu_inductor_compat"
# commands written for the reader to adapt, that read runs nox sessions make on two torch lines, or that a session
# runs as written (the quick start's GPT-2: minutes under torch_npu 2.7.1's codegen, which checks ~150 configs a
# kernel; tests/project/test_ci.py pins the session's command to the README's)
NOT_RUN = {
    "codegen my_model.py": "a placeholder for the reader's own script",
    "diff out/2.7.1 out/2.12.1": "reads two runs made by `nox -s codegen` on two torch lines",
    "codegen examples/models/gpt2.py": "`nox -s quickstart` runs it as written, on the newest torch, models extra",
}

pytestmark = [pytest.mark.subprocess, pytest.mark.download]


def documented_commands() -> list[str]:
    """The package's commands in the docs' bash blocks: continuation lines joined, comments dropped, the part after
    `&&` of an install line."""
    found: list[str] = []
    for name in DOCS:
        blocks = re.findall(r"^```bash\n(.*?)^```$", (ROOT / name).read_text(), re.MULTILINE | re.DOTALL)
        for block in blocks:
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #", 1)[0].strip()
                for part in line.split("&&"):
                    part = " ".join(part.split())
                    if part.startswith(PREFIX):
                        found.append(part)
    return list(dict.fromkeys(found))  # the report is in the README twice


def test_the_docs_have_commands_and_each_is_run_or_said_why_not() -> None:
    commands = documented_commands()
    assert len(commands) >= 6, commands
    for skipped in NOT_RUN:
        assert any(skipped in command for command in commands), f"{skipped!r} is no longer in the docs"


@pytest.mark.parametrize("command", documented_commands())
def test_a_documented_command_runs_as_written(command: str, tmp_path: Path) -> None:
    import npu_inductor_compat

    reason = next((why for text, why in NOT_RUN.items() if text in command), None)
    if reason is not None:
        pytest.skip(f"not run: {reason}")
    if "examples/models/" in command:
        pytest.importorskip("transformers", reason="the real models need the models extra (transformers)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the command's relative paths, as from a checkout
    arguments = shlex.split(command)[3:]
    done = subprocess.run(
        [sys.executable, "-m", "npu_inductor_compat", *arguments],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        cwd=tmp_path,
        env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"},
    )
    if "--without-fix flex-backward-symbolic-grid" in command:
        # the doc's own words: failing in stock's flex template on torch 2.7/2.8, one line saying so elsewhere
        if npu_inductor_compat.torch_line() == "v2_7_1":
            assert done.returncode == 1 and "cpp_wrapper requires SymbolicGridFn" in done.stderr, done.stderr[-3000:]
        else:
            assert done.returncode == 0 and "changes nothing" in done.stderr, done.stderr[-3000:]
        return
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
