"""torch-npu-two-reduction-tiling (common/torch_npu_tiling.py): its two parts on their own, then the record on
torch_npu's released codegen for batch norm, the forward kernel run in Triton's interpreter against torch."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernels on the exact torch its wheel requires; triton-ascend's
# front end lowers every config torch_npu's heuristics give; and the batch-norm statistics kernel runs in Triton's
# interpreter (TRITON_INTERPRET=1, the real triton.language on CPU tensors) with those configs, against torch.

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py

from npu_inductor_compat.common.torch_npu_tiling import (
    TWO_REDUCTION_TILING,
    loop_only_below_two_reductions,
    reduction_axes_only,
)

RECORD = TWO_REDUCTION_TILING.id
BATCH_NORM, LOOP_X0_BROKEN = harness.BATCH_NORM, harness.LOOP_X0_BROKEN

# The two shapes of a kernel body's loop over a tiling axis other than the last (written here, not torch_npu's code):
# the loop only for kernels of at most one reduction axis (the bug), and the loop unless the axis needs none
ONLY_BELOW_TWO = """
def codegen_body(self):
    if axis.is_tiling_axis:
        if self.numof_reduction_axis() <= 1:
            self.body.writeline(f"for loop_{axis.name} in range(loops_{axis.name}):")
"""
EVERY_TILING_AXIS = """
def codegen_body(self):
    if axis.is_tiling_axis:
        if self.numof_reduction_axis() > 1:
            width = 1
        if not axis.is_no_loop_axis:
            self.body.writeline(f"for loop_{axis.name} in range(loops_{axis.name}):")
"""


def test_the_probe_tells_a_loop_kept_from_kernels_of_two_reduction_axes() -> None:
    assert loop_only_below_two_reductions(ast.parse(textwrap.dedent(ONLY_BELOW_TWO)))
    assert not loop_only_below_two_reductions(ast.parse(textwrap.dedent(EVERY_TILING_AXIS)))


def _axis(name: str, order: int) -> SimpleNamespace:
    return SimpleNamespace(name=name, prefix=name[0], is_tiling_axis=True, tiling_order=order)


def test_only_reduction_axes_stay_tiled_where_a_kernel_reduces_over_two() -> None:
    x0, r2, r1 = _axis("x0", 0), _axis("r2", 1), _axis("r1", 2)
    kernel = SimpleNamespace(tiling_axis=[x0, r2, r1], numof_reduction_axis=lambda: 2)
    assert reduction_axes_only(kernel) == ["x0"]
    assert kernel.tiling_axis == [r2, r1] and [r2.tiling_order, r1.tiling_order] == [0, 1]
    assert (x0.is_tiling_axis, x0.tiling_order) == (False, None)

    y0, r1 = _axis("y0", 0), _axis("r1", 1)  # one reduction axis: the tiling stays as torch_npu chose it
    kernel = SimpleNamespace(tiling_axis=[y0, r1], numof_reduction_axis=lambda: 1)
    assert reduction_axes_only(kernel) == [] and kernel.tiling_axis == [y0, r1] and y0.is_tiling_axis


def _two_reduction_kernels(out: Path, summary: dict[str, Any]) -> dict[str, str]:
    return {
        name: source
        for graph in (0, 1)
        for name, source in harness.kernel_sources(out, summary, graph).items()
        if "'numof_reduction_axis': 2" in source
    }


# The batch-norm statistics kernel of the forward graph in Triton's interpreter, with each config torch_npu gave it.
# Its inputs from the wrapper's launch line: the convolution's output (its one buffer input) and the running mean and
# variance (the module's buffers, lifted by dynamo as primals in that order); every output pointer gets a zeroed
# tensor. Its outputs are the batch mean, 1/sqrt(var + eps) and the updated running statistics, in an order of
# torch_npu's choosing: each must be one of them, all four covered.
INTERPRETED = r"""

torch.manual_seed(0)
y = torch.randn(2, 8, 8, 8)
running_mean, running_var = torch.randn(8), torch.rand(8) + 0.5
expected = [
    y.mean((0, 2, 3)),
    running_mean * 0.9 + y.mean((0, 2, 3)) * 0.1,
    (y.var((0, 2, 3), unbiased=False) + 1e-5).rsqrt(),
    running_var * 0.9 + y.var((0, 2, 3), unbiased=True) * 0.1,
]
running = iter([running_mean, running_var])
arguments, outputs = [], []
for param, value in zip(launch["params"], launch["pointers"]):
    if param.startswith("in_ptr"):
        arguments.append(next(running) if value.startswith("primals_") else y)
    else:
        outputs.append(torch.zeros(8))
        arguments.append(outputs[-1])
results = []
for config in configs:
    for out in outputs:
        out.zero_()
    error = launched(config, arguments)
    if error is not None:
        results.append({"config": config, "error": error})
        continue
    # for each output, the expected statistic it is closest to, and how far
    closest = [min(((out - want).abs().max().item(), i) for i, want in enumerate(expected)) for out in outputs]
    results.append({"config": config, "error": None, "closest": closest})
print(json.dumps({"results": results}))
"""


def _interpreted(source: str, wrapper: str, name: str, configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = harness.interpret(INTERPRETED, source, wrapper, name, configs)["results"]
    return results


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_tiles_batch_norms_reduction_axes_only_and_its_statistics_are_right(tmp_path: Path) -> None:
    """Without the record torch_npu's batch-norm kernels read ``loop_x0`` and never open its loop (the reproducer in
    test_torch_npu_reports.py). With it the channel axis is a per-program loop, the static check passes, triton-ascend's
    front end lowers every config of every kernel that reduces over two axes, and the statistics kernel gives torch's
    batch mean, 1/std and running statistics in Triton's interpreter with each config. On a release that opens the
    loop itself the probe says "not needed" and the kernels are the same with and without the record."""
    release = harness.paired_release(LOOP_X0_BROKEN)
    if release not in LOOP_X0_BROKEN:  # `nox -s torch_npu_wheel`: the record must change nothing there
        run = harness.codegen(BATCH_NORM, (release,), tmp_path / "with")
        plain = harness.codegen(BATCH_NORM, (release,), tmp_path / "without", "--without-fix", RECORD)
        assert run.summary["fixes"][RECORD] == "not needed", run.summary["fixes"][RECORD]
        for graph in (0, 1):
            kernels = harness.kernel_sources(tmp_path / "with", run.summary, graph)
            assert kernels == harness.kernel_sources(tmp_path / "without", plain.summary, graph)
        return
    run = harness.codegen(BATCH_NORM, LOOP_X0_BROKEN, tmp_path / "with", "--check-kernels")
    status = run.summary["fixes"][RECORD]
    assert status == "applied" and run.problems == [], run.problems
    out = tmp_path / "with"
    two_axes = _two_reduction_kernels(out, run.summary)
    assert len(two_axes) >= 2, sorted(harness.kernel_sources(out, run.summary, 0))
    for source in two_axes.values():
        assert "loop_x0" not in source and re.search(r"for x0 in range\(x0_offset, ", source), source
    check = run.summary["kernel_check"]
    assert check["error"] is None and check["configs"] > 0, check
    for name in two_axes:
        configs = next(graph["kernel_check"][name] for graph in run.summary["graphs"] if name in graph["kernel_check"])
        assert configs and all(config["ok"] for config in configs), (name, configs)
    # with torch-npu-constant-load-reshape too (applied on the same releases) every kernel of the script compiles
    assert run.returncode == 0 and check["rejected"] == 0, check

    wrapper = (out / run.summary["graphs"][0]["files"]["wrapper"]).read_text()
    name = next(name for name in harness.kernel_sources(out, run.summary, 0) if name in two_axes)
    configs = [result["config"] for result in run.summary["graphs"][0]["kernel_check"][name]]
    results = _interpreted(two_axes[name], wrapper, name, configs)
    assert len(results) == len(configs) >= 1
    for result in results:  # each output one of the four statistics, to float32 rounding, and none left out
        assert result["error"] is None, result
        assert all(error <= 1e-5 for error, _ in result["closest"]), result
        assert sorted(statistic for _, statistic in result["closest"]) == [0, 1, 2, 3], result
