"""An unusable simulated-NPU extension cache stops `codegen` before the script runs, naming the cache and the fix,
with its own exit code (3), never a traceback that blames the script (issue #44); in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pointwise_reduction.py"
pytestmark = [pytest.mark.subprocess, pytest.mark.once]  # the cache's checks do not depend on torch's Inductor


def _codegen(tmp_path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    import os

    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(EXAMPLE), "--out", str(tmp_path / "out")]
    env = {**os.environ, "NPU_INDUCTOR_COMPAT_EXTENSION_CACHE": str(cache)}
    return subprocess.run([*command, "--quiet"], capture_output=True, text=True, timeout=600, check=False, env=env)


@pytest.mark.parametrize("damage", ["root-is-a-file", "folder-is-a-file"])
def test_an_unusable_extension_cache_exits_3_naming_it_before_the_script_runs(damage: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    if damage == "root-is-a-file":
        cache.write_text("not a folder")
    else:  # a file where each build folder goes: under it, mkdir fails with NotADirectoryError
        cache.mkdir()
        (cache / "blocker").write_text("x")
        cache = cache / "blocker" / "inner"
    done = _codegen(tmp_path, cache)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "cannot set the simulated NPU up" in done.stderr and str(cache).split("/inner")[0] in done.stderr
    assert "NPU_INDUCTOR_COMPAT_EXTENSION_CACHE" in done.stderr and "The script did not run" in done.stderr
    assert "Traceback" not in done.stderr and "os._exit" not in done.stderr
