"""Real models on the simulated NPU: convolution and every other aten operator without an npu kernel run on the CPU
(counted in summary.json), a transformers model (examples/models/) codegens unchanged, Ascend style, and a padded
batch gives on the npu what it gives on a CPU without torch_npu (transformers' torch_npu mask handling included)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

MODELS = ROOT / "examples" / "models"
RECORD_PIN = "torch-npu-numels-pinned"  # common/fixes/torch_npu_hint_numels.py

pytestmark = [pytest.mark.subprocess, pytest.mark.compile]
OFFLINE = {"HF_HUB_OFFLINE": "1"}


def codegen(tmp_path: Path, script: Path, provider: str = "stock", *flags: str) -> tuple[Any, Any]:
    # stock Inductor by default, whatever the default on this torch; random init only: nothing may come from the hub
    done = run_codegen(script, *flags, out=tmp_path / "out", provider=provider, cwd=tmp_path, env=OFFLINE)
    return done, done.summary


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


# transformers 5.24 integrations/sdpa_attention.py, when torch_npu is importable: a mask that is not bool becomes
# logical_not(mask.bool()) (True = attend) so that torch_npu's SDPA can take its fused path; torch_npu's SDPA for npu
# (op-plugin op_plugin/ops/opapi/ScaledDotProductAttentionKernelNpuOpApi.cpp, convert_boolean_attn_mask) inverts a
# bool mask again for npu_fusion_attention (True = masked), so on Ascend a bool mask means what it means to stock
# SDPA, which the simulated NPU runs. Both mask kinds: the bool one transformers builds, and a float one passed in.
PADDED_BERT = """
import sys
import torch
if sys.argv[1] == "npu":
    import torch_npu  # noqa: F401
from transformers import BertConfig, BertModel

torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
model = BertModel(config).eval().to(sys.argv[1])
ids = torch.randint(0, 64, (2, 8)).to(sys.argv[1])
padding = torch.ones(2, 8, dtype=torch.long)
padding[1, 5:] = 0  # the second sequence is padded
additive = torch.zeros(2, 1, 8, 8)
additive[1, :, :, 5:] = torch.finfo(torch.float32).min
run = torch.compile(model) if sys.argv[1] == "npu" else model
outputs = []
with torch.no_grad():
    for mask in (padding, additive, None):
        mask = None if mask is None else mask.to(sys.argv[1])
        outputs.append(run(input_ids=ids, attention_mask=mask).last_hidden_state.cpu())
torch.save(outputs, sys.argv[2])
"""


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers not installed (extra models)"
)
def test_a_padded_bert_batch_on_the_npu_matches_the_cpu_without_torch_npu(tmp_path: Path) -> None:
    script = tmp_path / "padded_bert.py"
    script.write_text(PADDED_BERT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cpu = subprocess.run(
        [sys.executable, str(script), "cpu", str(tmp_path / "cpu.pt")], capture_output=True, text=True, env=env
    )
    assert cpu.returncode == 0, cpu.stderr[-3000:]
    out = tmp_path / "out"
    npu = run_codegen(script, "--", "npu", str(tmp_path / "npu.pt"), out=out, provider=None, env=OFFLINE)
    assert npu.returncode == 0, npu.stderr[-3000:]
    summary = npu.summary
    assert summary["torch_npu_standin"]["imported"]  # transformers saw torch_npu: its npu mask handling ran
    assert {graph["device"] for graph in summary["graphs"]} == {"npu"}

    import torch

    expected, got = torch.load(tmp_path / "cpu.pt"), torch.load(tmp_path / "npu.pt")
    assert not torch.allclose(expected[0][1, :5], expected[2][1, :5])  # the padding changes the kept positions
    for want, have in zip(expected, got, strict=True):
        torch.testing.assert_close(have, want, rtol=1e-4, atol=1e-5)


def paired(release: str) -> None:
    """Skip unless this torch is the one torch_npu ``release`` requires (and its wheel can be had)."""
    import torch

    from npu_inductor_compat.tools.simulated.wheel import wheel_release

    try:
        found = wheel_release.paired_release(torch.__version__)
        wheel_release.unpacked(found)
    except wheel_release.WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    if found != release:
        pytest.skip(f"about torch_npu {release}; this torch pairs with {found}")


@pytest.mark.download
@pytest.mark.corpus  # the real model twice (with and without the record): ~1 min
@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="torchvision not installed (extra models)")
def test_torch_npu_2_7_1s_resnet18_batch_norm_backward_compiles_under_the_tiling_record(tmp_path: Path) -> None:
    """torch_npu 2.7.1.post11's linear kernels for ResNet-18's batch-norm backward (a channels-last input, a contiguous
    gradient) tile the channels beside both reduction axes and store a [1] sum into a [1, 1, 1] pointer: its own TTIR
    check rejects them with triton's message and falls back to no_linear (docs/torch-npu-reports.md). With
    torch-npu-two-reduction-tiling no kernel falls back and the run exits 0. The real model, unchanged, through
    torch_npu's released codegen on torch 2.7.1."""
    paired("2.7.1.post11")
    done, summary = codegen(tmp_path, MODELS / "resnet18.py", provider="torch_npu-wheel")
    assert summary is not None and summary["fixes"]["torch-npu-two-reduction-tiling"] == "applied", done.stderr
    assert done.returncode == 0 and summary["torch_npu_wheel"]["fallbacks"] == [], done.stderr[-3000:]
    assert all(graph["status"] == "ok" for graph in summary["graphs"]), summary["graphs"]
    (tmp_path / "without").mkdir()
    done, summary = codegen(
        tmp_path / "without",
        MODELS / "resnet18.py",
        "torch_npu-wheel",
        "--without-fix",
        "torch-npu-two-reduction-tiling",
    )
    assert summary is not None and done.returncode == 1, done.stderr[-3000:]
    fallbacks = summary["torch_npu_wheel"]["fallbacks"]
    assert len(fallbacks) == 2, fallbacks
    for fallback in fallbacks:
        (kernel,) = fallback["kernels"]
        assert fallback["fallback"] == "linear -> no_linear" and "native_batch_norm_backward" in kernel, fallback
        assert "Cannot broadcast, rank mismatch: [1], [1, 1, 1]" in fallback["error"], fallback["error"][-500:]


@pytest.mark.download
@pytest.mark.corpus  # the real model twice (with and without the record): ~1 min
@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers not installed (extra models)"
)
def test_torch_npu_2_9_1s_dynamic_bert_trains_with_its_sizes_pinned(tmp_path: Path) -> None:
    """torch_npu 2.9.1 builds its index kernels at the size hints (docs/torch-npu-reports.md). With
    torch-npu-numels-pinned dynamic BERT's two sequence lengths compile a forward and a backward each and the run
    exits 0; without it the backward fails in torch_npu's rebuild of a flattened dim whose length it left None (the
    index divides by the symbolic length, the range by its hint). The real model through torch_npu's codegen."""
    paired("2.9.1")
    done, summary = codegen(tmp_path, MODELS / "bert.py", provider="torch_npu-wheel")
    assert summary is not None and summary["fixes"]["torch-npu-numels-pinned"] == "applied", done.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    graphs = [(graph["compile_id"], graph["status"]) for graph in summary["graphs"]]
    assert graphs == [("0/0", "ok"), ("0/0", "ok"), ("0/1", "ok"), ("0/1", "ok")], graphs
    (tmp_path / "without").mkdir()
    done, summary = codegen(tmp_path / "without", MODELS / "bert.py", "torch_npu-wheel", "--without-fix", RECORD_PIN)
    assert summary is not None and done.returncode == 1, done.stderr[-3000:]
    assert [graph["status"] for graph in summary["graphs"]] == ["ok", "error"], summary["graphs"]
    message = str(summary["graphs"][1]["error"]["message"])
    assert "unsupported operand type(s) for *: 'Symbol' and 'NoneType'" in message, message


@pytest.mark.download
@pytest.mark.corpus
@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torchvision") is None,
    reason="transformers or torchvision not installed (extra models)",
)
def test_the_models_outside_the_corpus_give_the_docs_table(tmp_path: Path) -> None:
    """docs/codegen.md's table of examples/models_extra/ (Qwen2, DistilBERT, Whisper, MobileNetV3) recomputed: each
    model through the corpus tool (`codegen --check-kernels`, stock Inductor, triton-ascend 3.2.0), its exit code,
    graphs, kernels and rejections as the table says, every rejection the class-C zero stride it names. Proves the
    table's numbers on torch 2.12, where it was measured; not the generated code's values (no --execute here)."""
    import matrix
    import torch

    if not torch.__version__.startswith("2.12."):
        pytest.skip("docs/codegen.md's table of the models outside the corpus is measured on torch 2.12 only")
    docs = (ROOT / "docs" / "codegen.md").read_text()
    section = docs[docs.index("**Library models outside the corpus.**") :]
    table = matrix.parse(section[section.index("| model |") : section.index("\n\n", section.index("| model |"))])
    numbers = ("exit", "graphs", "kernels", "accepted")
    expected = {
        model: (*(int(table[name][model]) for name in numbers), table["rejected"][model]) for model in table["exit"]
    }
    out = tmp_path / "models_extra.json"
    command = [
        sys.executable,
        "-m",
        "npu_inductor_compat.tools.simulated.kernels.model_corpus",
        str(ROOT / "examples" / "models_extra"),
    ]
    command += ["--provider", "stock", "--out", str(out), "--work", str(tmp_path / "work")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, env=env)
    assert out.exists(), done.stderr[-3000:]
    found = {}
    for entry in json.loads(out.read_text())["models"]:
        rejected = sum(entry["rejected"].values())
        assert all("strides must not be zero" in message for message in entry["rejected"]), entry["rejected"]
        cell = f"{rejected} C" if rejected else "0"
        found[entry["model"]] = (entry["exit"], entry["graphs"], entry["kernels"], entry["accepted"], cell)
    assert found == expected, done.stderr[-3000:]
