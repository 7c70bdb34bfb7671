"""`codegen --provider torch_npu-wheel` of a script on this torch's paired torch_npu release, for the tests of
torch_npu's own codegen (reproducers and records): `import torch_npu_codegen_harness` in a test module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from npu_inductor_compat.tools.simulated import wheel_release
from npu_inductor_compat.tools.simulated.wheel_release import WheelUnavailable

BATCH_NORM = Path(__file__).resolve().parent.parent / "examples" / "torch_npu_batch_norm.py"
# The releases whose batch-norm kernels (two reduction axes) read loop_x0 and never open its loop (seen on each
# pair run here; the others generate them clean), without the record torch-npu-two-reduction-tiling
LOOP_X0_BROKEN = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")
ENV_KEYS = ("NPU_INDUCTOR_COMPAT_AUTOLOAD", "NPU_INDUCTOR_COMPAT_TORCH_VERSION", "TORCHINDUCTOR_NPU_BACKEND")
EVERY_RELEASE = "NPU_INDUCTOR_COMPAT_EVERY_RELEASE"


class Run(NamedTuple):
    release: str
    returncode: int
    stderr: str
    summary: dict[str, Any]
    problems: list[str]  # the static check's


def paired_release(about: tuple[str, ...]) -> str:
    """This torch's torch_npu release; the test is skipped, saying why, without one, or when the release is not
    among ``about`` (the releases the test is about) unless EVERY_RELEASE is set (`nox -s torch_npu_wheel`)."""
    import torch

    try:
        release = wheel_release.paired_release(torch.__version__)
        wheel_release.unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    if release not in about and not os.environ.get(EVERY_RELEASE):
        pytest.skip(f"the test is not about torch_npu {release} (set {EVERY_RELEASE}=1 to run it)")
    return release


def run_codegen(script: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """The command run into ``out``, in its parent folder. One string hash for every run: torch_npu joins some masks
    in set order, which would otherwise differ between two runs of one script."""
    env = {key: value for key, value in os.environ.items() if key not in ENV_KEYS} | {"PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script), "--provider", "torch_npu-wheel"]
    return subprocess.run(
        [*command, "--out", str(out), "--quiet", *flags],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=out.parent,
        env=env,
    )


def codegen(script: Path, about: tuple[str, ...], out: Path, *flags: str, graphs: int = 2) -> Run:
    """The run on a release the test is about (else skipped), its ``graphs`` graphs compiled."""
    release = paired_release(about)
    done = run_codegen(script, out, *flags)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["script_error"] is None and summary["torch_npu_standin"]["wheel"]["torch_npu"] == release
    assert [graph["status"] for graph in summary["graphs"]] == ["ok"] * graphs, done.stderr[-3000:]
    problems = [problem for failure in summary["static_check"]["failures"] for problem in failure["problems"]]
    return Run(release, done.returncode, done.stderr, summary, problems)
