"""Reproducers for torch_npu bugs (fixed by no record, or shown without theirs), each with an upstream report text in
docs/torch-npu-reports.md: torch_npu's released codegen (the torch_npu-wheel provider, one level below the device)
generates the kernel for a minimal script on the exact torch its wheel requires, and the test reads it."""

# Run on every pair by `nox -s torch_npu_wheel` (NPU_INDUCTOR_COMPAT_EVERY_RELEASE=1); CI's core lines run only the
# release each reproducer is about, so the default sessions do not grow.

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

BATCH_NORM, LOOP_X0_BROKEN = harness.BATCH_NORM, harness.LOOP_X0_BROKEN
LONG_ROWS = ROOT / "examples" / "torch_npu_long_rows.py"
# The releases whose batch-norm linear kernels store a block into a scalar pointer: torch_npu's own TTIR check rejects
# them and it falls back to its no_linear kernels (the run exits 1, naming them)
BLOCK_STORE_FALLBACK = ("2.10.0.post7", "2.13.0", "2.14.0")
# The releases whose reduction configs (npu_triton_heuristics.py) keep only the split-axis blocks when their tile
# generator finds no tile: few rows (at most half the vector cores) of more elements than one tile holds
UNTILED_LONG_ROWS = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")


def run_reproducer(
    script: Path, broken: tuple[str, ...], cwd: Path, flags: tuple[str, ...] = ()
) -> tuple[list[str], list[tuple[dict[str, Any], str]]] | None:
    """On a release of ``broken`` the static check's problems (at least one) and each failure with its kernel's
    source; None on another release, whose kernels are checked clean, with no fallback of torch_npu's."""
    run = harness.codegen(script, broken, cwd / "out", *flags)
    release, returncode, stderr, summary, problems = run
    if release not in broken:
        assert returncode == 0 and problems == [], (problems, stderr[-3000:])
        assert summary["torch_npu_wheel"]["fallbacks"] == [], summary["torch_npu_wheel"]["fallbacks"]
        return None
    assert returncode == 1 and problems, stderr[-3000:]
    out = cwd / "out"
    failures = [
        (
            failure,
            (out / summary["graphs"][failure["graph"]]["files"]["kernels"][failure["kernel"]]["source"]).read_text(),
        )
        for failure in summary["static_check"]["failures"]
    ]
    return problems, failures


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_batch_norm_kernels_read_loop_x0_and_never_open_its_loop(tmp_path: Path) -> None:
    """torch_npu's index kernel for a reduction over two axes (batch norm over N and H*W) counts ``loops_x0`` but
    never opens the ``for loop_x0 in range(loops_x0)`` loop, and computes its x index from ``loop_x0`` (ResNet-18 and
    ViT hit it). Without the record torch-npu-two-reduction-tiling (tests/common/fixes/test_torch_npu_tiling.py) the
    static check names each such kernel; releases without the bug generate the script clean."""
    without = ("--without-fix", "torch-npu-two-reduction-tiling")
    found = run_reproducer(BATCH_NORM, LOOP_X0_BROKEN, tmp_path, flags=without)
    if found is None:
        return
    problems, failures = found
    assert all("reads 'loop_x0' before defining it" in problem for problem in problems), problems
    for failure, source in failures:  # the kernel counts its x0 loops but never opens the loop
        assert "batch_norm" in failure["kernel"]
        assert "loops_x0 = " in source and "loop_x0 * X0BLOCK_SUB" in source, failure
        assert "for loop_x0 in range(loops_x0)" not in source, failure


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_batch_norm_kernels_store_a_block_into_a_scalar_pointer(tmp_path: Path) -> None:
    """torch_npu 2.10.0.post7, 2.13.0 and 2.14.0's linear index kernel for the same batch norm stores a block value
    through a scalar pointer (``tl.store(ptr + (x0), tmpN, None)``): triton rejects it in torch_npu's own TTIR check,
    torch_npu falls back to its no_linear kernel for both batch-norm kernels, and the run exits 1 naming them. Shown
    without the record torch-npu-persistent-reduction-store (tests/common/fixes/test_torch_npu_store.py)."""
    without = ("--without-fix", "torch-npu-persistent-reduction-store")
    release, returncode, _, summary, problems = harness.codegen(
        BATCH_NORM, BLOCK_STORE_FALLBACK, tmp_path / "out", *without
    )
    fallbacks = summary["torch_npu_wheel"]["fallbacks"]
    if release not in BLOCK_STORE_FALLBACK:
        assert fallbacks == [], fallbacks
        return
    assert returncode == 1 and problems == [], problems
    assert len(fallbacks) == 2, fallbacks
    for fallback in fallbacks:
        (kernel,) = fallback["kernels"]
        assert fallback["fallback"] == "linear -> no_linear" and "batch_norm" in kernel, fallback
        assert "Value argument cannot be block type if pointer argument is not a block" in fallback["error"]
        assert re.search(r"tl\.store\(\w+ \+ \(x0 ?\), tmp\d+, None\)", fallback["error"]), fallback["error"]


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_reduction_over_a_few_long_rows_keeps_a_config_without_its_sub_blocks(tmp_path: Path) -> None:
    """The max of each of 4 rows of 50257 logits (greedy decoding over GPT-2's vocabulary): torch_npu's tile generator
    adds no config for so few rows of more elements than a tile holds, and the heuristics then keep one with the
    split-axis block only. The kernel declares X0BLOCK_SUB and R1BLOCK_SUB, so triton-ascend's front end cannot build
    it (--check-kernels: every config rejected); releases without the bug give configs with both, which lower. Shown
    without the record torch-npu-long-rows-tiles (tests/common/fixes/test_torch_npu_long_rows.py), in both processes."""
    without = ("--without-fix", "torch-npu-long-rows-tiles")
    release, returncode, stderr, summary, problems = harness.codegen(
        LONG_ROWS, UNTILED_LONG_ROWS, tmp_path / "out", "--check-kernels", *without, graphs=1
    )
    assert problems == [], problems
    ((kernel, results),) = summary["graphs"][0]["kernel_check"].items()
    if release not in UNTILED_LONG_ROWS:
        assert returncode == 0 and all(result["ok"] for result in results), stderr[-3000:]
        assert all(any(key.endswith("BLOCK_SUB") for key in result["config"]) for result in results), results
        return
    assert returncode == 1 and summary["kernel_check"]["every_config_rejected"] == [f"graph 0: {kernel}"], stderr
    ((result,),) = (results,)
    assert not any(key.endswith("BLOCK_SUB") for key in result["config"]), result["config"]
    assert result["stage"] is None and "IndexError" in result["error"], result["error"]
