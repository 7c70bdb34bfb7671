"""An unusable cache (the simulated NPU's extension, the torch_npu wheel's tree) stops `codegen` before the script
runs, naming it and the fix, with its own exit code (3), never a traceback that blames the script (issue #44)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

EXAMPLE = ROOT / "examples" / "pointwise_reduction.py"
pytestmark = pytest.mark.subprocess


def _codegen(tmp_path: Path, cache: Path, variable: str = "NPU_INDUCTOR_COMPAT_EXTENSION_CACHE") -> Any:
    # codegen's default provider: torch_npu's own codegen where this torch has a pair
    return run_codegen(EXAMPLE, "--quiet", out=tmp_path / "out", provider=None, env={variable: str(cache)})


def test_a_linked_torch_npu_tree_folder_exits_3_naming_it_before_the_script_runs(tmp_path: Path) -> None:
    """Where torch_npu's own codegen is the default (a paired torch): its tree cache's folder is a link."""
    import torch

    from npu_inductor_compat.tools.simulated.wheel import wheel_release

    try:
        wheel_release.paired_release(torch.__version__)
    except wheel_release.WheelUnavailable:
        pytest.skip(f"no torch_npu release is paired with torch {torch.__version__}")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / wheel_release.UNPACKED_DIR).symlink_to(tmp_path / "elsewhere")
    done = _codegen(tmp_path, tmp_path / "wheels", "NPU_INDUCTOR_COMPAT_WHEEL_CACHE")
    assert done.returncode == 3, done.stderr[-3000:]
    folder = tmp_path / wheel_release.UNPACKED_DIR
    assert f"the cache folder {folder} is a symbolic link; remove it" in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "os._exit" not in done.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.once  # the extension cache's checks do not depend on torch's Inductor
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
