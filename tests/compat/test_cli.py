"""The report: `python -m npu_inductor_compat` and `--json`."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import npu_inductor_compat
from npu_inductor_compat.__main__ import main
from npu_inductor_compat.lines import LINES


def test_report_names_versions_line_reason_and_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    assert main([]) == 0
    out = capsys.readouterr().out
    assert f"torch                {torch.__version__}" in out
    assert f"line     {npu_inductor_compat.torch_line()}  (torch " in out
    assert re.search(r"^  npu-backend-option +\[config\]  applied$", out, re.M)


def test_json_is_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(npu_inductor_compat.status()))
    assert printed["active"] is True


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_unsupported_torch_is_a_message_and_exit_1(
    flag: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_TORCH_VERSION", "2.6.0")
    assert main(flag) == 1
    captured = capsys.readouterr()
    oldest = LINES[0].first_text
    assert f"unsupported torch: torch 2.6.0 is older than the oldest supported release {oldest}" in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_failed_activation_is_a_message_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--backend", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "activation failed, nothing applied" in err and "unknown NPU backend 'cuda'" in err
    assert npu_inductor_compat.status()["applied"] == []


@pytest.mark.once
def test_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--no-such-flag"])
    assert caught.value.code == 2


@pytest.mark.subprocess
def test_module_entry_point_runs_in_a_fresh_interpreter(run_python: Any) -> None:
    done = run_python("import runpy; runpy.run_module('npu_inductor_compat', run_name='__main__')")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "npu-inductor-compat report" in done.stdout


@pytest.mark.subprocess
def test_torch_logs_shows_the_decisions(run_python: Any) -> None:
    """torch's TORCH_LOGS accepts an importable module name on every supported line: no registration needed."""
    code = "import runpy; runpy.run_module('npu_inductor_compat', run_name='__main__')"
    for setting, debug_seen in (("npu_inductor_compat", False), ("+npu_inductor_compat", True)):
        done = run_python(code, env={"TORCH_LOGS": setting})
        assert done.returncode == 0, done.stderr[-2000:]
        assert "npu_inductor_compat: using v" in done.stderr  # the line chosen and why
        assert "npu_inductor_compat: npu-backend-option applied" in done.stderr
        assert ("npu_inductor_compat: applied npu-backend-option ->" in done.stderr) is debug_seen
    quiet = run_python(code)
    assert "npu_inductor_compat: npu-backend-option applied" not in quiet.stderr


def test_version_names_the_package_and_the_torch_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert (
        out
        == f"npu-inductor-compat {npu_inductor_compat.__version__} (torch line {npu_inductor_compat.torch_line()})\n"
    )


@pytest.mark.subprocess
def test_the_console_script_is_installed_and_is_the_same_command() -> None:
    """The README documents `npu-inductor-compat` as the same command as `python -m npu_inductor_compat`."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("npu-inductor-compat")
    assert script.is_file(), f"no console script beside {sys.executable}: is the package installed?"
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"npu-inductor-compat {npu_inductor_compat.__version__} (torch line v")


@pytest.mark.parametrize("text", ["lock_init_val=1,lock_init_value=7", "lock_init_value=7, lock_init_val=1"])
@pytest.mark.once
def test_kernel_metadata_refuses_both_names_of_the_lock_initial_value(
    text: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """At the parser, and through `codegen`'s entry: a usage error (exit 2) before anything runs or is written."""
    from npu_inductor_compat.tools.simulated.codegen.codegen_args import parse_kernel_metadata

    with pytest.raises(ValueError, match="lock_init_val.+lock_init_value.+name the same field.+give one"):
        parse_kernel_metadata(text)
    assert parse_kernel_metadata("lock_init_value=7") == {"lock_init_value": 7}
    script, out = tmp_path / "script.py", tmp_path / "out"
    script.write_text("raise SystemExit('the script ran')\n")
    with pytest.raises(SystemExit) as caught:
        main(["codegen", str(script), "--out", str(out), "--cpp-wrapper", "--kernel-metadata", text])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert re.search(r"--kernel-metadata: lock_init_val(ue)? and lock_init_val(ue)? name the same field", err), err
    assert "give one of them" in err and not out.exists()


@pytest.mark.parametrize("where", ["a directory", "in a missing folder"])
@pytest.mark.once
def test_fixes_out_that_cannot_take_the_json_is_a_message_and_exit_2(
    where: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out, said = (
        (tmp_path, "is a directory")
        if where == "a directory"
        else (tmp_path / "no" / "f.json", f"the folder {tmp_path / 'no'} does not exist")
    )
    assert main(["fixes", "--json", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"npu_inductor_compat fixes: --out {out}: {said}")
    assert not (tmp_path / "no").exists()


@pytest.mark.once
def test_fixes_out_without_json_is_a_usage_error(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["fixes", "--out", str(tmp_path / "f.json")])
    assert caught.value.code == 2 and "--out writes the JSON: give --json with it" in capsys.readouterr().err
    assert not (tmp_path / "f.json").exists()
