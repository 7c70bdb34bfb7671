"""Record flex-decoding-split-from-device through the real Inductor pipeline on the simulated NPU: flex decoding (one
query token, GQA) sizes its split from the SM count; torch 2.9+ asks torch.cuda for it whatever the device. Stock
Inductor's decoding kernel, the one the record is about (torch_npu's: tests/tools/wheel/test_torch_npu_flex.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common import flex
from npu_inductor_compat.common.fixes import flex_decoding_split

EXAMPLE = ROOT / "examples" / "flex_decoding.py"
RECORD = flex_decoding_split.DECODING_SPLIT_FROM_DEVICE.id

pytestmark = pytest.mark.subprocess


def _codegen(out: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = run_codegen(EXAMPLE, "--quiet", *extra, out=out)  # stock Inductor's decoding kernel
    assert done.summary is not None, done.stderr[-3000:]
    return done, done.summary


@pytest.fixture
def asks_cuda() -> None:
    if not flex.decoding_asks_cuda():
        pytest.skip("this torch's flex decoding asks no CUDA property (torch 2.7/2.8: flex-configs-from-device)")


def test_with_its_record_flex_decoding_lowers_for_npu(asks_cuda: None, tmp_path: Path) -> None:
    done, summary = _codegen(tmp_path / "with")
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary["fixes"][RECORD] == "applied"
    (graph,) = summary["graphs"]
    assert graph["status"] == "ok" and any(name.startswith("triton_tem_") for name in graph["kernels"])


def test_without_its_record_flex_decoding_asks_cuda_and_fails(asks_cuda: None, tmp_path: Path) -> None:
    done, summary = _codegen(tmp_path / "without", "--without-fix", RECORD)
    assert done.returncode == 1
    (graph,) = summary["graphs"]
    assert "NVIDIA driver" in graph["error"]["message"], graph["error"]
