"""torch-npu-dynamic-persistent-reduction (common/fixes/torch_npu_dynamic_reductions.py): what it calls a static
length, then torch_npu's released codegen of a softmax over a dynamic length, its kernel run against eager."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernel on the exact torch its wheel requires, and `--execute` runs
# it in Triton's interpreter, launched as the wrapper launches it, against eager. --max-configs keeps it to the first
# configs: the bug is in the kernel's code, the same in every config.

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.fixes.torch_npu_dynamic_reductions import (
    DYNAMIC_PERSISTENT_REDUCTION,
    length_is_static,
)

RECORD = DYNAMIC_PERSISTENT_REDUCTION.id
SCRIPT = ROOT / "tests" / "scripts" / "dynamic_softmax.py"
# The releases whose filter_masks drops a persistent reduction's axis mask (is_persistent_reduction_axis)
UNMASKED = ("2.7.1.post11", "2.9.0.post9", "2.10.0.post7", "2.13.0", "2.14.0")


class Numels(tuple):  # the shape of 2.10.0.post7's NumelList: a tuple of lengths that multiplies them on request
    def numels(self) -> sympy.Expr:
        return sympy.Mul(*self)


def test_a_length_is_static_only_when_it_names_no_size_symbol() -> None:
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    for static in (12, sympy.Integer(12), (sympy.Integer(4), 3), Numels((sympy.Integer(4), sympy.Integer(3)))):
        assert length_is_static(static), static
    for dynamic in (s0, 2 * s0, (s0,), (sympy.Integer(4), s0), Numels((sympy.Integer(4), s0))):
        assert not length_is_static(dynamic), dynamic


@pytest.mark.subprocess
@pytest.mark.download
def test_a_softmax_of_dynamic_length_matches_under_the_record_and_reads_past_its_rows_without(
    tmp_path: Path,
) -> None:
    """A softmax over a sequence length marked dynamic and bounded by 512 (as BERT's positions bound it): with the
    record, a looped reduction that matches eager. Without it, the releases that drop the axis mask make it
    persistent, and the kernel, its block (16) past the length (12), loads past the bias: an error naming the kernel
    and the load, exit 1. Where torch_npu keeps the mask, the probe says "not needed" and the run matches."""
    release = harness.paired_release(UNMASKED)
    flags = ("--execute", "--max-configs", "2")
    run = harness.codegen(SCRIPT, (release,), tmp_path / "with", *flags, graphs=1)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.summary["graphs"][0]["execution"]["status"] == "match", run.summary["graphs"][0]["execution"]
    status = run.summary["fixes"][RECORD]
    if release not in UNMASKED:  # `nox -s torch_npu_wheel`: torch_npu masks the axis itself
        assert status == "not needed", status
        return
    assert status == "applied", run.summary["fixes"]
    (looped,) = run.summary["graphs"][0]["files"]["kernels"]
    assert looped.startswith("triton_red_"), looped

    plain = harness.codegen(SCRIPT, (release,), tmp_path / "without", *flags, "--without-fix", RECORD, graphs=1)
    assert plain.returncode == 1, plain.stderr[-3000:]
    (persistent,) = plain.summary["graphs"][0]["files"]["kernels"]
    wrong = plain.summary["graphs"][0]["execution"]["first_wrong"]
    assert persistent.startswith("triton_per_") and wrong["kernel"] == persistent, wrong
    message = wrong["detail"]["message"]
    assert wrong["detail"]["type"] == "InterpreterError" and "OutOfBounds" in message and "a load of" in message
