"""The v2_7_1 fix of torch 2.7's in-place reuse check (pytorch issue 151423): its lookup shadowing, its probe, and
a conv + batch norm training step through `codegen`, with and without the record."""

# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [file]: the v2_7_1 line's own in-place fix

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py

import npu_inductor_compat
from npu_inductor_compat.v2_7_1 import inplace

FIX_ID = inplace.INPLACE_SKIPS_REMOVED_USERS.id
# On npu tensors the variance record computes var_mean in two plain steps, with no Welford reduction and so no unused
# count output: the codegen runs switch it off, so that the path torch's bug is on is the one compiled. Stock
# Inductor's codegen: torch_npu's own (the default on 2.7.1) lowers var_mean without a Welford reduction as well.
WELFORD_OFF = ("--provider", "stock", "--without-fix", "npu-variance-two-step")

# The smallest model found that hits it: batch norm's backward recomputes the statistics of the saved convolution
# output with a Welford reduction whose count output nobody reads, and the next kernel may reuse that (donated) buffer.
SCRIPT = """
import torch
import torch_npu  # noqa: F401

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)).npu()
torch.compile(model)(torch.randn(2, 4, 2, 2).npu()).sum().backward()
print("conv + batch norm training step done")
"""


class FakeScheduler:
    def __init__(self, names: set[str]) -> None:
        self.name_to_fused_node = {name: f"fused {name}" for name in names}

    def get_fused_node(self, node: Any) -> Any:
        return self.name_to_fused_node[node.get_first_name()]


def node(name: str, scheduler: FakeScheduler) -> Any:
    return SimpleNamespace(scheduler=scheduler, get_first_name=lambda: name)


def test_during_the_check_a_removed_user_is_no_fused_node_and_the_lookup_is_put_back() -> None:
    scheduler = FakeScheduler({"op1", "op2"})

    def check(self: Any) -> list[Any]:  # what torch 2.7.1's nested check asks, for itself and two users
        return [self.scheduler.get_fused_node(node(name, self.scheduler)) for name in ("op1", "op2", "op50")]

    patched = inplace.skipping_removed_users(check)
    assert patched(node("op1", scheduler)) == ["fused op1", "fused op2", inplace.REMOVED_USER]
    assert "get_fused_node" not in vars(scheduler)
    with pytest.raises(KeyError, match="op50"):  # outside the check the scheduler's own lookup is back
        scheduler.get_fused_node(node("op50", scheduler))


def test_an_error_in_the_check_still_puts_the_lookup_back() -> None:
    scheduler = FakeScheduler({"op1"})
    own = scheduler.get_fused_node
    scheduler.get_fused_node = own  # an instance attribute of its own: restored, not deleted

    def check(self: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        inplace.skipping_removed_users(check)(node("op1", scheduler))
    assert vars(scheduler)["get_fused_node"] is own


def test_the_record_is_applied_exactly_where_torchs_check_lacks_the_membership_test() -> None:
    """torch 2.7.1's nested check has no name_to_fused_node test; 2.9.1's and 2.12.1's have (checked by hand)."""
    status = {fix["id"]: fix["status"] for fix in npu_inductor_compat.activate()["fixes"]}
    needed = not inplace.check_skips_removed_users()
    assert needed == (npu_inductor_compat.torch_line() == "v2_7_1" and _torch_minor() == (2, 7))
    if npu_inductor_compat.torch_line() == "v2_7_1":
        assert status[FIX_ID] == ("applied" if needed else "not needed")


def _torch_minor() -> tuple[int, int]:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


def conv_bn_codegen(tmp_path: Path, *extra: str) -> tuple[Any, Any]:
    script, out = tmp_path / "conv_bn.py", tmp_path / "out"
    script.write_text(SCRIPT)
    done = run_codegen(script, *extra, out=out, provider=None, cwd=tmp_path)
    assert done.summary is not None, done.stderr[-3000:]
    return done, done.summary


# torch 2.8 (the same line) already tests membership: the record's own probe says where the bug is
needs_the_fix = pytest.mark.skipif(
    npu_inductor_compat.torch_line() != "v2_7_1" or inplace.check_skips_removed_users(),
    reason="the check lacks the membership test on torch 2.7 only",
)


@pytest.mark.subprocess
@needs_the_fix
def test_with_the_fix_a_conv_batch_norm_training_step_generates_both_graphs(tmp_path: Path) -> None:
    done, summary = conv_bn_codegen(tmp_path, *WELFORD_OFF)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "conv + batch norm training step done" in done.stdout
    assert summary["fixes"][FIX_ID] == "applied"
    assert [(g["kind"], g["status"]) for g in summary["graphs"]] == [("forward", "ok"), ("backward", "ok")]


@pytest.mark.subprocess
@needs_the_fix
def test_without_the_fix_the_backward_stops_with_torchs_key_error(tmp_path: Path) -> None:
    """The bug is real on this line (and on stock CPU Inductor too: ResNet-18's training step fails the same way)."""
    done, summary = conv_bn_codegen(tmp_path, *WELFORD_OFF, FIX_ID)
    assert done.returncode == 1
    assert summary["fixes"][FIX_ID] == "skipped"
    graphs = {g["kind"]: g for g in summary["graphs"]}
    assert graphs["forward"]["status"] == "ok"
    assert graphs["backward"]["error"]["type"] == "KeyError"
    assert graphs["backward"]["error"]["message"].strip("'\"").startswith("op")
