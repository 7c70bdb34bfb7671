"""Real models on the simulated NPU: convolution and every other aten operator without an npu kernel run on the CPU
(counted in summary.json), and a transformers model (examples/models/) codegens unchanged, Ascend style."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"

pytestmark = [pytest.mark.subprocess, pytest.mark.compile]


def codegen(tmp_path: Path, script: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script), "--out", str(out)]
    command += ["--provider", "stock"]  # stock Inductor, whatever the default on this torch
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # random init only: nothing may come from the hub
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path, env=env)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
    return done, summary


CONV_SCRIPT = """
import torch
import torch_npu  # noqa: F401

torch.manual_seed(0)
conv = torch.nn.Conv2d(3, 4, 3, padding=1)
x = torch.randn(2, 3, 8, 8)
expected = conv(x)
expected.sum().backward()
cpu_grad = conv.weight.grad.clone()
conv.zero_grad()
npu_conv = conv.npu()
out = torch.compile(npu_conv)(x.npu())
out.sum().backward()
torch.testing.assert_close(out.cpu(), expected)
torch.testing.assert_close(npu_conv.weight.grad.cpu(), cpu_grad)
# eager, outside any graph: an operator with no npu kernel of its own goes to the CPU fallback
print("cumsum", torch.cumsum(torch.arange(4.0).npu(), 0).cpu().tolist())
"""


def test_convolution_and_its_backward_run_on_the_npu_and_fallbacks_are_counted(tmp_path: Path) -> None:
    script = tmp_path / "conv.py"
    script.write_text(CONV_SCRIPT)
    done, summary = codegen(tmp_path, script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not implemented" not in done.stderr
    assert "cumsum [0.0, 1.0, 3.0, 6.0]" in done.stdout
    kinds = [(graph["kind"], graph["device"], graph["status"]) for graph in summary["graphs"]]
    assert kinds == [("forward", "npu", "ok"), ("backward", "npu", "ok")]
    fallback = summary["cpu_fallback"]
    assert fallback["aten::cumsum.out"] >= 1 and all(count > 0 for count in fallback.values())
    assert not any("convolution" in name for name in fallback)  # registered kernels, not the fallback
    assert list(fallback.values()) == sorted(fallback.values(), reverse=True)
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("cpu fallback: ")]
    assert f"{sum(fallback.values())} call(s) of {len(fallback)} operator(s)" in line


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers not installed (extra models)"
)
def test_gpt2_from_transformers_codegens_unchanged_with_a_training_step(tmp_path: Path) -> None:
    done, summary = codegen(tmp_path, MODELS / "gpt2.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "gpt2 on npu (bf16 autocast)" in done.stdout
    assert summary["torch_npu_standin"] == {"imported": True, "not_simulated": []}
    npu = [graph for graph in summary["graphs"] if graph["device"] == "npu" and graph["status"] == "ok"]
    assert {"inference", "forward", "backward"} <= {graph["kind"] for graph in npu}
    assert sum(len(graph["kernels"]) for graph in npu) > 10
