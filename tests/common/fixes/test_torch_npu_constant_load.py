"""torch-npu-constant-load-reshape (common/fixes/torch_npu_constant_load.py): its probe's reading on its own, then the
record on torch_npu's released codegen for batch norm's backward, the kernel run in Triton's interpreter."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernels on the exact torch its wheel requires; triton-ascend's
# front end lowers every config torch_npu's heuristics give; and the kernel runs in Triton's interpreter
# (TRITON_INTERPRET=1, the real triton.language on CPU tensors) with those configs, against torch.

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py

from npu_inductor_compat.common.device.cse_steering import generate_steered
from npu_inductor_compat.common.fixes.torch_npu_constant_load import CONSTANT_LOAD_RESHAPE, broadcasts_constant_load

RECORD = CONSTANT_LOAD_RESHAPE.id
# The releases whose batch-norm backward broadcasts the loss gradient to the kernel's rank (seen on each pair)
BROADCAST_BROKEN = harness.LOOP_X0_BROKEN
# the statement each writes after ``tmpN = tl.load(ptr + tl.arange(0,1) + (0))``
SIZE_ONE_DIMS = re.compile(r"tmp\d+ = tl\.(broadcast_to|reshape)\(tmp\d+, \[1(?:, 1)+ ?\]\)")

# Two shapes of a load()'s statement for a constant index's size-1 dimensions (written here, not torch_npu's code)
BROADCASTS = """
def load(self, name, index):
    if append_broadcast:
        line = f"tl.broadcast_to({result_var}, {append_broadcast})"
"""
RESHAPES = """
def load(self, name, index):
    if append_broadcast:
        line = f"tl.reshape({result_var}, {append_broadcast})"
    line = f"tl.broadcast_to({other}, {shape})"
"""


def test_steering_a_cses_generate_nests_and_puts_its_own_back() -> None:
    """Both load records steer the same kernel's CSE during one load(): the steerings compose, inner last, and the
    CSE's own generate is back (no instance attribute left) when the blocks end, raised or not."""

    class CSE:
        def generate(self, buffer: Any, expr: str) -> str:
            return expr

    cse = CSE()
    with generate_steered(cse, lambda generate: lambda buffer, expr: generate(buffer, expr) + "a"):
        with generate_steered(cse, lambda generate: lambda buffer, expr: generate(buffer, expr) + "b"):
            assert cse.generate(None, "x") == "xab"
        assert cse.generate(None, "x") == "xa"
    assert "generate" not in cse.__dict__ and cse.generate(None, "x") == "x"
    with pytest.raises(RuntimeError), generate_steered(cse, lambda generate: generate):
        raise RuntimeError("codegen failed")
    assert "generate" not in cse.__dict__


def test_the_probe_tells_a_broadcast_of_a_constant_load_from_a_reshape() -> None:
    assert broadcasts_constant_load(ast.parse(textwrap.dedent(BROADCASTS)))
    assert not broadcasts_constant_load(ast.parse(textwrap.dedent(RESHAPES)))


# The backward's pointwise kernel of batch norm + ReLU in Triton's interpreter, with each config torch_npu gave it.
# Its arguments by the names the backward graph gives them on its launch line: the convolution's output, the saved
# batch mean and 1/std, the batch norm's weight and bias (primals_7, primals_8), the loss gradient (a 0-d tensor:
# tangents_1), then its output. It recomputes the ReLU's input and passes the gradient where the ReLU was positive.
INTERPRETED = r"""
torch.manual_seed(0)
y = torch.randn(2, 8, 8, 8)
mean, rstd = y.mean((0, 2, 3)), (y.var((0, 2, 3), unbiased=False) + 1e-5).rsqrt()
weight, bias, grad = torch.randn(8), torch.randn(8), torch.tensor(0.75)
given = {"convolution": y, "getitem_1": mean, "rsqrt": rstd, "primals_7": weight, "primals_8": bias, "tangents_1": grad}
relu_input = (y - mean[:, None, None]) * rstd[:, None, None] * weight[:, None, None] + bias[:, None, None]
expected = torch.where(relu_input > 0, grad, torch.zeros(()))
results = []
for config in configs:
    out = torch.full_like(y, float("nan"))
    arguments = [given[value] if param.startswith("in_ptr") else out
                 for param, value in zip(launch["params"], launch["pointers"])]
    error = launched(config, arguments)
    if error is not None:
        results.append({"config": config, "error": error})
        continue
    results.append({"config": config, "error": None, "max_abs_error": (out - expected).abs().max().item(),
                    "passed": int((expected != 0).sum())})
print(json.dumps({"results": results}))
"""


def _power_of_2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _backward_kernel(out: Path, summary: dict[str, Any]) -> tuple[str, str]:
    """The backward's kernel that reads the loss gradient at a constant index: its name and source."""
    found = [
        (name, source)
        for name, source in harness.kernel_sources(out, summary, 1).items()
        if "tl.arange(0,1) +  (0)" in source
    ]
    assert len(found) == 1, sorted(harness.kernel_sources(out, summary, 1))
    return found[0]


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_reshapes_the_loss_gradient_and_the_kernel_compiles_and_is_right(tmp_path: Path) -> None:
    """Without the record torch_npu's backward kernel of a batch norm + ReLU broadcasts the loss gradient, loaded as
    a block of one, to the kernel's rank: triton-ascend's front end rejects every config (``Cannot broadcast, rank
    mismatch: [1], [1, 1]``). With it the gradient is reshaped, as torch_npu's other branches write it, every config
    lowers, and the kernel gives the ReLU-masked gradient in Triton's interpreter with each config. On a release
    that reshapes it already the probe says "not needed" and the kernels are the same with and without."""
    release = harness.paired_release(BROADCAST_BROKEN)
    without = ("--without-fix", RECORD)
    if release not in BROADCAST_BROKEN:  # `nox -s torch_npu_wheel`: the record must change nothing there
        run = harness.codegen(harness.BATCH_NORM, (release,), tmp_path / "with")
        plain = harness.codegen(harness.BATCH_NORM, (release,), tmp_path / "without", *without)
        assert run.summary["fixes"][RECORD] == "not needed", run.summary["fixes"][RECORD]
        for graph in (0, 1):
            kernels = harness.kernel_sources(tmp_path / "with", run.summary, graph)
            assert kernels == harness.kernel_sources(tmp_path / "without", plain.summary, graph)
        return
    plain = harness.codegen(harness.BATCH_NORM, BROADCAST_BROKEN, tmp_path / "without", "--check-kernels", *without)
    name, source = _backward_kernel(tmp_path / "without", plain.summary)
    found = SIZE_ONE_DIMS.search(source)
    assert found is not None and found.group(1) == "broadcast_to", source
    assert plain.returncode == 1 and plain.summary["kernel_check"]["every_config_rejected"] == [f"graph 1: {name}"]
    errors = [config["error"] for config in plain.summary["graphs"][1]["kernel_check"][name]]
    assert all("Cannot broadcast, rank mismatch: [1], [1, 1" in error for error in errors), errors

    run = harness.codegen(harness.BATCH_NORM, BROADCAST_BROKEN, tmp_path / "with", "--check-kernels")
    assert run.summary["fixes"][RECORD] == "applied" and run.returncode == 0, run.stderr[-3000:]
    name, source = _backward_kernel(tmp_path / "with", run.summary)
    found = SIZE_ONE_DIMS.search(source)
    assert found is not None and found.group(1) == "reshape", source
    configs = [config["config"] for config in run.summary["graphs"][1]["kernel_check"][name]]
    assert configs and all(config["ok"] for config in run.summary["graphs"][1]["kernel_check"][name])

    wrapper = (tmp_path / "with" / run.summary["graphs"][1]["files"]["wrapper"]).read_text()
    # Triton's interpreter takes only power-of-2 aranges (triton-ascend lowers others, e.g. X2BLOCK_SUB=24)
    runnable = [
        config for config in configs if all(_power_of_2(value) for value in config.values() if type(value) is int)
    ]
    results = harness.interpret(INTERPRETED, source, wrapper, name, runnable)["results"]
    assert len(results) == len(runnable) >= 2, configs
    for result in results:  # float32 arithmetic on both sides; some elements pass the gradient, some do not
        assert result["error"] is None and result["max_abs_error"] <= 1e-5, result
        assert 0 < result["passed"] < 2 * 8 * 8 * 8, result
