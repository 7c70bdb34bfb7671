"""The corpus's rejection classes (docs/codegen.md) against triton-ascend's real compiler front end (AST -> TTIR ->
linalg as `codegen --check-kernels`; no CANN, so no npubin). A and B: fix records (common/fixes/kernel_forms.py), each
kernel rejected without its record, accepted with it. C: an upstream-limit reproducer."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import TESTS

from npu_inductor_compat.common.fixes import kernel_forms

# One graph per case; sizes chosen so Inductor makes persistent reductions (A) and a looped one (B).
SCRIPT = """
import torch
import torch_npu  # noqa: F401

def gather_softmax(x, idx):  # A: the gather's index may be negative, so Inductor wraps it
    return torch.softmax(x[idx], dim=-1)

def scatter_softmax(x, idx):  # A, the store side: an atomic_add through the same wrap (embedding backward)
    return torch.zeros(16, 40, device=x.device).index_put_((idx,), torch.softmax(x, -1), accumulate=True)

def layer_norm(x):  # B: var_mean over 8192 elements, a looped reduction
    return torch.nn.functional.layer_norm(x, x.shape[-1:])

idx = torch.tensor([-1, 3, -5, 0, 7, 2]).to("npu")
torch.compile(gather_softmax)(torch.randn(16, 40).to("npu"), idx)
torch.compile(scatter_softmax)(torch.randn(6, 40).to("npu"), idx)
torch.compile(layer_norm)(torch.randn(4, 8192).to("npu"))
"""
RECORDS = [kernel_forms.INDEX_WRAP_AS_SHIFT.id, kernel_forms.VARIANCE_TWO_STEP.id]

# The compiler's own words for each class (triton-adapter-opt aborts; kernel_check keeps its assertion line).
CLASS_A = "llvm::cast(From *) [To = mlir::scf::ForOp, From = mlir::Operation]: Assertion `isa<To>(Val)"
CLASS_B = 'Assertion `reduceOp.getSrcs().size() <=2 && "Only reduce or reduce with index are supported"\' failed.'
CLASS_C = "<unknown>:0: error: strides must not be zero"


def _triton_ascend() -> Any:
    from npu_inductor_compat.tools.simulated.kernels import kernel_check

    try:
        return kernel_check.locate()
    except kernel_check.KernelCheckUnavailable as err:
        pytest.skip(f"triton-ascend unavailable: {err}")


def _codegen(script: Path, out: Path, *extra: str) -> list[tuple[str, Path]]:
    # stock Inductor's kernels (on a torch_npu pair the default is torch_npu's)
    done = run_codegen(script, "--quiet", *extra, out=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    from npu_inductor_compat.tools.simulated.kernels import kernel_check

    summary = done.summary
    wanted = "skipped" if extra else "applied"
    assert {record: summary["fixes"][record] for record in RECORDS} == dict.fromkeys(RECORDS, wanted)
    return [(name, path) for _, name, path in kernel_check.kernel_files(out, summary)]


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every config of every kernel, generated with the records and without them, lowered in one worker:
    {"with" | "without": {kernel name: [result per config]}}."""
    from npu_inductor_compat.tools.simulated.kernels import kernel_check

    triton_ascend = _triton_ascend()
    work = tmp_path_factory.mktemp("kernel_forms")
    script = work / "classes.py"
    script.write_text(textwrap.dedent(SCRIPT))
    runs = {
        "with": _codegen(script, work / "with"),
        "without": _codegen(script, work / "without", "--without-fix", *RECORDS),
    }
    files = {  # the kernels the tests read (not the scatter's zero fill)
        str(path): (run, name)
        for run, kernels in runs.items()
        for name, path in kernels
        if any(part in name for part in ("softmax", "layer_norm"))
    }
    found: dict[str, dict[str, list[dict[str, Any]]]] = {"with": {}, "without": {}}
    for result in kernel_check.lower([Path(file) for file in files], triton_ascend):
        assert result["file"] is not None, result["error"]
        run, name = files[result["file"]]
        found[run].setdefault(name, []).append(result)
    return found


def _kernel(found: dict[str, list[dict[str, Any]]], part: str) -> list[dict[str, Any]]:
    names = [name for name in found if part in name]
    assert len(names) == 1, sorted(found)
    return found[names[0]]


@pytest.mark.subprocess
@pytest.mark.download
def test_class_a_a_gather_through_the_index_wrap_at_xblock_1_is_accepted_with_its_record(lowered: Any) -> None:
    without = {result["config"]["XBLOCK"]: result for result in _kernel(lowered["without"], "softmax_index_0")}
    assert not without[1]["ok"] and CLASS_A in without[1]["error"], without[1]["error"]
    assert all(result["ok"] for xblock, result in without.items() if xblock != 1)  # only XBLOCK=1 is refused
    with_fix = _kernel(lowered["with"], "softmax_index_0")
    assert {result["config"]["XBLOCK"] for result in with_fix} == set(without)
    assert all(result["ok"] for result in with_fix), [result["error"] for result in with_fix]
    # the scatter keeps upstream's wrap, the only form its atomic_add lowers with at XBLOCK=1 (i + shift aborts)
    for run in ("with", "without"):
        scatter = _kernel(lowered[run], "index_put")
        assert scatter and all(result["ok"] for result in scatter), [result["error"] for result in scatter]


@pytest.mark.subprocess
@pytest.mark.download
def test_class_b_a_looped_variance_is_accepted_with_its_record(lowered: Any) -> None:
    without = _kernel(lowered["without"], "layer_norm")
    assert without and all(not result["ok"] and CLASS_B in result["error"] for result in without)
    with_fix = _kernel(lowered["with"], "layer_norm")
    assert with_fix and all(result["ok"] for result in with_fix), [result["error"] for result in with_fix]


@pytest.mark.subprocess
@pytest.mark.download
@pytest.mark.once
@pytest.mark.upstream_limit
def test_class_c_a_load_through_a_zero_stride_pointer_block_is_rejected() -> None:
    """Upstream limit (triton-ascend 3.2.0): no fix record, since a load inside a masked subblock must keep its
    mask, and a pointer block of shape [1, R] with a mask of [XBLOCK, R] is refused by its front end too. When
    this test fails, a new triton-ascend accepts the kernel: rerun the corpus and drop class C from its table."""
    from npu_inductor_compat.tools.simulated.kernels import kernel_check

    results = kernel_check.lower([TESTS / "triton_ascend" / "zero_stride_load.py"], _triton_ascend())
    by_xblock = {result["config"]["XBLOCK"]: result for result in results}
    assert by_xblock[1]["ok"], by_xblock[1]["error"]  # one row: no zero stride, so the same kernel lowers
    assert not by_xblock[8]["ok"] and by_xblock[8]["stage"] == "ttir-passes"
    assert CLASS_C in by_xblock[8]["error"].splitlines(), by_xblock[8]["error"]
