"""torch-npu-two-reduction-tiling (common/fixes/torch_npu_tiling.py): its two parts on their own, then the record on
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

import batch_norm_interpreted_harness as interpreted  # registered by conftest.py
import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py

from npu_inductor_compat.common.fixes.torch_npu_tiling import (
    TWO_REDUCTION_TILING,
    low_dims_tiled_whatever_the_reductions,
    reduction_axes_only,
)

RECORD = TWO_REDUCTION_TILING.id
BATCH_NORM, LOOP_X0_BROKEN = harness.BATCH_NORM, harness.LOOP_X0_BROKEN

# The two shapes of a choice of tiling axes (written here, not torch_npu's code): every low dim tiled whatever the
# kernel's reductions (the bug), and low dims tiled only under a test of them
EVERY_LOW_DIM = """
def select_tiling_axis(self):
    def select_tiling(low_dim=True, reduction=True):
        for axis in reversed(self.kernel.sorted_axis):
            if low_dim and axis.sorted_order in self.kernel.low_dims and axis not in self.kernel.tiling_axis:
                self.kernel.tiling_axis.append(axis)
            if reduction and axis.prefix == "r" and axis not in self.kernel.tiling_axis:
                self.kernel.tiling_axis.append(axis)
    if self.kernel.numof_reduction_axis() > 1 and all(axis.is_tiling_axis for axis in self.kernel.tiling_axis):
        return
"""
LOW_DIMS_BY_REDUCTIONS = """
def select_tiling_axis(self):
    for axis in reversed(self.kernel.sorted_axis):
        if self.kernel.numof_reduction_axis() <= 1 or self.contiguous_reduction:
            if axis.sorted_order in self.kernel.low_dims:
                self.kernel.tiling_axis.append(axis)
"""


def test_the_probe_tells_low_dims_tiled_whatever_the_reductions() -> None:
    assert low_dims_tiled_whatever_the_reductions(ast.parse(textwrap.dedent(EVERY_LOW_DIM)))
    assert not low_dims_tiled_whatever_the_reductions(ast.parse(textwrap.dedent(LOW_DIMS_BY_REDUCTIONS)))


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


def test_a_contiguous_reduction_keeps_the_tiling_torch_npu_chose() -> None:
    """The wrapper of select_tiling_axis: 2.7.1.post11's line marks a reduction whose axes are adjacent
    (SplitTiling.contiguous_reduction) and permutes its channels out itself, so its tiling stays; a split reduction,
    or a release with no such mark (2.8.0.post5's line), keeps the reduction axes only."""

    def tiled(**marks: bool) -> list[str]:
        x0, r2, r1 = _axis("x0", 0), _axis("r2", 1), _axis("r1", 2)
        kernel = SimpleNamespace(tiling_axis=[], numof_reduction_axis=lambda: 2)

        def select_tiling_axis(self: Any) -> None:
            self.kernel.tiling_axis[:] = [x0, r2, r1]

        wrapped = TWO_REDUCTION_TILING.changes[0].replacement(select_tiling_axis)
        wrapped(SimpleNamespace(kernel=kernel, **marks))
        return [axis.name for axis in kernel.tiling_axis]

    assert tiled(contiguous_reduction=True) == ["x0", "r2", "r1"]
    assert tiled(contiguous_reduction=False) == ["r2", "r1"]
    assert tiled() == ["r2", "r1"]


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_tiles_batch_norms_reduction_axes_only_and_its_statistics_are_right(tmp_path: Path) -> None:
    """Without the record torch_npu's batch-norm kernels read ``loop_x0`` and never open its loop (the reproducer in
    test_torch_npu_reports.py). With it the channel axis is a per-program loop, the static check passes, triton-ascend's
    front end lowers every config of every kernel that reduces over two axes, and the statistics kernel gives torch's
    batch mean, 1/std and running statistics in Triton's interpreter with each config. On a release that opens the
    loop (2.7.1.post11's line) this batch norm's channels are not tiled: its kernels are the same with and without."""
    release = harness.paired_release(LOOP_X0_BROKEN)
    if release not in LOOP_X0_BROKEN:  # `nox -s torch_npu_wheel`: the record changes nothing of it there
        run = harness.codegen(BATCH_NORM, (release,), tmp_path / "with")
        plain = harness.codegen(BATCH_NORM, (release,), tmp_path / "without", "--without-fix", RECORD)
        assert run.summary["fixes"][RECORD] == "applied", run.summary["fixes"][RECORD]
        for graph in (0, 1):
            kernels = harness.kernel_sources(tmp_path / "with", run.summary, graph)
            assert kernels == harness.kernel_sources(tmp_path / "without", plain.summary, graph)
        return
    run = harness.codegen(BATCH_NORM, LOOP_X0_BROKEN, tmp_path / "with", "--check-kernels")
    status = run.summary["fixes"][RECORD]
    assert status == "applied" and run.problems == [], run.problems
    out = tmp_path / "with"
    two_axes = interpreted.two_reduction_kernels(out, run.summary)
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

    interpreted.forward_statistics_right(out, run.summary, two_axes)


# The releases that tile the channels of that backward kernel and fail their own TTIR check without the record (seen
# on each pair run here; 2.10.0.post7, 2.13.0 and 2.14.0 need torch-npu-persistent-reduction-store too)
CHANNELS_SUMMED = ("2.7.1.post11", "2.9.0.post9", "2.10.0.post7", "2.13.0", "2.14.0")


def _fallback_errors(run: Any) -> list[str]:
    return [str(fallback["error"]) for fallback in run.summary["torch_npu_wheel"]["fallbacks"]]


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_keeps_a_channels_last_batch_norms_channels_out_of_its_sums(tmp_path: Path) -> None:
    """ResNet-18's batch-norm backward in small: a channels-last input and a contiguous gradient. Without the record
    2.7.1.post11's line tiles the channels beside the two reduction axes, sums across them and stores the [1] sum
    through a [1, 1, 1] pointer: its own TTIR check rejects the kernel (triton's message) and it falls back. With the
    record the channels are a per-program loop, triton-ascend's front end lowers every config, and in Triton's
    interpreter the kernel gives torch's per-channel sums with each config (one order of its two per-channel
    inputs). 2.10.0.post7, 2.13.0 and 2.14.0 store those sums as they should with torch-npu-persistent-reduction-store
    (applied too, tests/common/fixes/test_torch_npu_store.py)."""
    release = harness.paired_release(("2.7.1.post11", "2.9.0.post9"))
    plain = harness.codegen(interpreted.CHANNELS_LAST, (release,), tmp_path / "without", "--without-fix", RECORD)
    run = harness.codegen(interpreted.CHANNELS_LAST, (release,), tmp_path / "with", "--check-kernels")
    assert run.summary["fixes"][RECORD] == "applied" and run.problems == [], run.problems
    rank_mismatch = "Cannot broadcast, rank mismatch: [1], [1, 1, 1]"
    if release in CHANNELS_SUMMED:
        assert plain.returncode == 1 and any(rank_mismatch in error for error in _fallback_errors(plain)), plain.stderr
    interpreted.channels_last_run_checked(release, run)
    out = tmp_path / "with"
    source = interpreted.channels_last_backward_right(out, run.summary)
    assert re.search(r"for x0 in range\(x0_offset, ", source), source
