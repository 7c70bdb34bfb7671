"""torch-npu-persistent-reduction-store (common/fixes/torch_npu_store.py): its probe and its rewrite on their own, then
the record on torch_npu's released codegen for batch norm, the kernels run in Triton's interpreter against torch."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernels on the exact torch its wheel requires; triton-ascend's
# front end lowers every config; and the kernels run in Triton's interpreter with those configs, against torch.
# Without the record the same script is the reproducer in test_torch_npu_reports.py (the release's own TTIR check
# rejects both batch-norm kernels and falls back).

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import batch_norm_interpreted_harness as interpreted  # registered by conftest.py
import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py

from npu_inductor_compat.common.fixes.torch_npu_store import (
    PERSISTENT_REDUCTION_STORE,
    persistent_reductions_left_out,
    with_block_of_one,
)

RECORD = PERSISTENT_REDUCTION_STORE.id
# The releases whose store methods leave persistent reductions over two axes out of the ``+ tl.arange(0,1)`` form
SCALAR_POINTER_STORE = ("2.10.0.post7", "2.13.0", "2.14.0")

# The two shapes of store_reduction's store line (written here after torch_npu/_inductor/codegen/triton.py, not its
# code): 2.10.0.post7's guard that leaves persistent reductions out (the bug), and 2.9.0.post9's test of the
# reduction axes alone
LEAVES_PERSISTENT_OUT = """
def store_reduction(self, name, index, value):
    line = f"tl.store({var} + ({indexing.index_str} ), {value}, {indexing.mask_str})"
    if self.numof_reduction_axis() > 1 and not self.persistent_reduction:
        line = f"tl.store({var} + ({indexing.index_str} + tl.arange(0,1) ), {value}, {indexing.mask_str})"
    self.post_loop_store.writeline(DeferredLine(name, line))
"""
EVERY_TWO_AXIS_REDUCTION = LEAVES_PERSISTENT_OUT.replace(" and not self.persistent_reduction", "")


def test_the_probe_tells_a_store_that_leaves_persistent_reductions_out() -> None:
    assert persistent_reductions_left_out(ast.parse(textwrap.dedent(LEAVES_PERSISTENT_OUT)))
    assert not persistent_reductions_left_out(ast.parse(textwrap.dedent(EVERY_TWO_AXIS_REDUCTION)))


def test_a_store_gets_the_block_of_one_as_torch_npus_other_releases_write_it() -> None:
    """The store lines 2.10.0.post7 writes for a persistent reduction over two axes (store's, then
    store_reduction's, indented as in a kernel), rewritten to the text 2.9.0.post9 writes for them; a store of any
    other form, or one that has the block of one already, stays as it is."""
    assert with_block_of_one("tl.store(out_ptr0 + (x0), tmp3, None)") == (
        "tl.store(out_ptr0 + (x0 + tl.arange(0,1) ), tmp3, None)"
    )
    assert with_block_of_one("        tl.store(in_out_ptr0 + (r1 + 64*x0 ), tmp5, x0_mask)") == (
        "        tl.store(in_out_ptr0 + (r1 + 64*x0 + tl.arange(0,1) ), tmp5, x0_mask)"
    )
    for kept in (
        "tl.store(out_ptr0 + (x0 + tl.arange(0,1) ), tmp3, None)",
        "tl.atomic_add(out_ptr0 + (x0), tmp3, None)",
        "tl.store(block_ptr0, tl.broadcast_to(tmp3, [XBLOCK]).to(tl.float32), boundary_check=[0])",
        "tmp3 = tl.sum(tmp2, 1)[:, None]",
    ):
        assert with_block_of_one(kept) == kept, kept
    assert with_block_of_one("if (") == "if ("  # no expression at all


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_stores_batch_norms_statistics_through_a_block_of_one(tmp_path: Path) -> None:
    """A batch norm over N and H*W (examples/torch_npu_batch_norm.py) and a channels-last one's backward
    (examples/torch_npu_channels_last_batch_norm.py, ResNet-18's in small): with the record every store of their
    persistent two-axis reductions has the block of one, no kernel falls back, triton-ascend's front end lowers every
    config, and in Triton's interpreter the kernels give torch's batch statistics and per-channel sums with each
    config. Releases that write the block of one themselves report the record "not needed"."""
    release = harness.paired_release(SCALAR_POINTER_STORE)
    run = harness.codegen(harness.BATCH_NORM, (release,), tmp_path / "with", "--check-kernels")
    if release not in SCALAR_POINTER_STORE:  # `nox -s torch_npu_wheel`: the probe finds the store written right
        assert run.summary["fixes"][RECORD] == "not needed", run.summary["fixes"][RECORD]
        return
    assert run.summary["fixes"][RECORD] == "applied" and run.problems == [], run.problems
    assert run.returncode == 0 and run.summary["torch_npu_wheel"]["fallbacks"] == [], run.stderr[-3000:]
    out = tmp_path / "with"
    two_axes = interpreted.two_reduction_kernels(out, run.summary)
    assert len(two_axes) >= 2, sorted(harness.kernel_sources(out, run.summary, 0))
    for source in two_axes.values():
        stores = re.findall(r"tl\.store\(\w+ \+ \((.*)\), tmp\d+, ", source)
        assert stores and all(store.rstrip().endswith("+ tl.arange(0,1)") for store in stores), source
    interpreted.forward_statistics_right(out, run.summary, two_axes)

    run = harness.codegen(interpreted.CHANNELS_LAST, (release,), tmp_path / "last", "--check-kernels")
    interpreted.channels_last_run_checked(release, run)
    interpreted.channels_last_backward_right(tmp_path / "last", run.summary)
