"""Wrong-code records shown by `codegen --execute`: torch_npu's released codegen run as written (kernels in Triton's
interpreter) is an error or mismatch naming the kernel without the record, and a match with it."""

# torch_npu cannot run here, so the records are shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the wrapper and kernels on the exact torch its wheel requires, and
# `--execute` runs them, launched as the wrapper launches them, against eager. --max-configs keeps it to the first
# configs: the bugs are in the kernel's code, the same in every config.

from __future__ import annotations

from pathlib import Path

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.fixes.torch_npu_backports import MASKED_LOAD_SIZE_SYMBOLS

EXAMPLE = ROOT / "examples" / "torch_npu_branch_fixes.py"
# The releases whose filter_masks drops the guard of a load in a masked subblock (the v2.7.1 and v2.9.0 branches)
DROPS_THE_GUARD = ("2.7.1.post11", "2.9.0.post9")


@pytest.mark.subprocess
@pytest.mark.download
def test_execute_names_the_load_past_the_shorter_tensor_without_the_masked_load_record(tmp_path: Path) -> None:
    """slice_scatter of 200 elements into 256, both sizes dynamic: without torch-npu-masked-load-size-symbols the
    kernel loads the shorter tensor at all 256 places, which on the device reads past its end (the values are
    discarded, so only the memory check sees it): an error naming the kernel, the load and in_ptr1's size, exit 1.
    With the record, every graph matches eager."""
    release = harness.paired_release(DROPS_THE_GUARD)
    flags = ("--execute", "--max-configs", "2")
    run = harness.codegen(EXAMPLE, (release,), tmp_path / "with", *flags)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [graph["execution"]["status"] for graph in run.summary["graphs"]] == ["match", "match"]
    status = run.summary["fixes"][MASKED_LOAD_SIZE_SYMBOLS.id]
    if release not in DROPS_THE_GUARD:  # `nox -s torch_npu_wheel`: torch_npu keeps the guard itself
        assert status == "not needed", status
        return
    assert status == "applied", run.summary["fixes"]

    without = (*flags, "--without-fix", MASKED_LOAD_SIZE_SYMBOLS.id)
    plain = harness.codegen(EXAMPLE, (release,), tmp_path / "without", *without)
    assert plain.returncode == 1, plain.stderr[-3000:]
    scatter, softmax = (graph["execution"] for graph in plain.summary["graphs"])
    assert scatter["status"] == "error" and softmax["status"] == "match", (scatter, softmax)
    wrong = scatter["first_wrong"]
    (kernel,) = plain.summary["graphs"][0]["files"]["kernels"]
    assert wrong["kernel"] == kernel and wrong["detail"]["type"] == "InterpreterError", wrong
    message = wrong["detail"]["message"]
    assert "OutOfBounds" in message and "a load of" in message and "which holds 200;" in message, message
    assert f"kernel {kernel}" in plain.stderr
