"""Records for torch_npu codegen bugs that only some of its release branches fixed
(common/fixes/torch_npu_backports.py)."""

# torch_npu cannot run here, so the bugs are shown one level below the device: torch_npu's real released Inductor code
# (the torch_npu-wheel provider, tools/simulated/wheel/torch_npu_wheel.py) generates the kernels for the simulated NPU,
# and the tests read the generated Triton source. With the records the kernels are right; with them disabled
# (``--without-fix``) the same run shows each bug. The records' probes run torch_npu's own methods, so the verdict on
# each line comes from the installed torch_npu; it is checked against the survey's static reading of the same wheel.

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat import torch_line
from npu_inductor_compat.common.composition import fix_registry
from npu_inductor_compat.common.fixes import (
    torch_npu_backports,
    torch_npu_constant_load,
    torch_npu_load_order,
    torch_npu_long_rows,
    torch_npu_split_ranges,
    torch_npu_store,
    torch_npu_tiling,
    torch_npu_unfixed,
)
from npu_inductor_compat.dispatch import load_line
from npu_inductor_compat.patching import Change, Patch, absent_targets
from npu_inductor_compat.tools import wheel_cache
from npu_inductor_compat.tools.simulated.kernels import triton_ascend_site
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable, paired_release, unpacked
from npu_inductor_compat.tools.torch_npu_survey import survey

EXAMPLES = ROOT / "examples"
EXAMPLE = EXAMPLES / "torch_npu_branch_fixes.py"
SPLIT_EXAMPLE = EXAMPLES / "torch_npu_split_ranges.py"
# Every record of a torch_npu_* module of common/fixes/ is checked here against torch_npu's released codegen and the
# survey's static verdict, a new module's included, unless it is checked apart, for the reason given.
CHECKED_APART = {
    "torch_npu_flex_lowering": "flex only: tests/tools/wheel/test_torch_npu_flex.py, test_torch_npu_flex_lowering.py",
    "torch_npu_split_blocks": "its bug needs more blocks than cores: tests/common/fixes/test_torch_npu_split_blocks.py",
    "torch_npu_fallbacks": "it applies under CI=true only: tests/common/fixes/test_torch_npu_fallbacks.py",
}
_ADAPTERS = load_line(torch_line()).adapters
IDS = tuple(
    record.id
    for module in fix_registry.fix_modules()
    if (name := module.__name__.rpartition(".")[2]).startswith("torch_npu_") and name not in CHECKED_APART
    for record in fix_registry.records_of(module, _ADAPTERS)
)
SPLIT = torch_npu_split_ranges.SPLIT_SYMBOLIC_SIZES.id
CANT_SPLIT = torch_npu_split_ranges.CANT_SPLIT_ARGUMENTS.id
STRICT_SUM = torch_npu_unfixed.MAKE_REDUCTION_STRICT_SUM.id
MASKED_SUBBLOCK = torch_npu_unfixed.MASKED_SUBBLOCK_SIZE_SYMBOLS.id
ARGREDUCE = torch_npu_backports.LOOPED_ARGREDUCE_INDEX.id
LOAD_ORDER = torch_npu_load_order.MASKED_LOAD_PERMUTE_ORDER.id
TILING = torch_npu_tiling.TWO_REDUCTION_TILING.id
CONSTANT_LOAD = torch_npu_constant_load.CONSTANT_LOAD_RESHAPE.id
STORE = torch_npu_store.PERSISTENT_REDUCTION_STORE.id
LONG_ROWS = torch_npu_long_rows.LONG_ROWS_TILES.id
# the records whose bug shows in the generated kernels (without the other two torch_npu falls back or fails the
# lowering: tested apart)
KERNEL_IDS = tuple(record.id for record in torch_npu_backports.FIXES)
# a load guarded by a computed mask (tl.load(ptr + (index), tmpN, ...)), not only by the axis masks
GUARDED_LOAD = re.compile(r"tl\.load\([^,]+,\s*tmp\d+\b")
REDUCTION_DECORATOR = re.compile(r"^@\w+\.(persistent_reduction|reduction)\w*\(", re.MULTILINE)


def reduction_kind(source: str) -> str | None:
    found = REDUCTION_DECORATOR.search(source)
    return found.group(1) if found else None


# ------------------------------------------------------------------------------------------------ in this process
def test_size_symbols_are_told_from_kernel_axes() -> None:
    for name in ("s0", "s27", "ps1", "i3"):
        assert torch_npu_backports.is_size_symbol(name), name
    for name in ("x0", "y1", "r2", "s", "ks0", "tmp3", "sx0"):
        assert not torch_npu_backports.is_size_symbol(name), name


def test_without_torch_npus_code_the_records_are_skipped_saying_why() -> None:
    """No torch_npu in this environment: nothing to patch, said per record, before any probe runs. The strict_sum
    record's target is torch's own make_reduction (torch_npu replaces it there): without torch_npu its probe finds
    torch's, which takes what torch's sum lowering passes."""
    from npu_inductor_compat.activation import activate, deactivate

    try:
        report = activate()
    finally:
        deactivate()
    found = {fix["id"]: fix for fix in report["fixes"]}
    for fix_id in (
        *KERNEL_IDS,
        MASKED_SUBBLOCK,
        SPLIT,
        CANT_SPLIT,
        LOAD_ORDER,
        TILING,
        CONSTANT_LOAD,
        STORE,
        LONG_ROWS,
    ):
        assert found[fix_id]["status"] == "skipped", found[fix_id]
        assert "nothing to patch: torch_npu's code is not here" in found[fix_id]["detail"], found[fix_id]
    assert found[STRICT_SUM]["status"] == "not needed"


def test_a_record_for_another_package_needs_optional_changes_and_reports_what_is_absent() -> None:
    with pytest.raises(ValueError, match="every change must be optional"):
        Patch("x", "why", "up", "when", (Change("json:dumps", lambda old: old),), patches_package="json")
    present = Patch(
        "x", "why", "up", "when", (Change("json:dumps", lambda old: old, optional=True),), patches_package="json"
    )
    assert absent_targets(present) is None
    gone = Patch(
        "x",
        "why",
        "up",
        "when",
        (
            Change("json:no_such_function", lambda old: old, optional=True),
            Change("no_such_module_here:f", lambda old: old, optional=True),
        ),
        patches_package="json",
    )
    assert absent_targets(gone) == "json's code is not here (target 'json:no_such_function' does not exist)"


# ------------------------------------------------------------------------------------------------ torch_npu's code
@pytest.fixture(scope="module")
def wheel_release() -> str:
    import torch

    try:
        release = paired_release(torch.__version__)
        unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    return release


def codegen(
    tmp_path: Path, name: str, *extra: str, ok: bool = True, script: Path = EXAMPLE
) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / name
    done = harness.torch_npu_codegen(script, out, *extra)
    assert done.returncode == 0 or not ok, done.stderr[-3000:]
    return out, json.loads((out / "summary.json").read_text())


def verdicts(release: str) -> dict[str, str]:
    report = survey.survey(wheel_cache.fetch(release))
    return {fix["id"]: fix["status"] for fix in report.fixes}


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_kernels_show_each_bug_without_its_record_and_not_with_it(
    wheel_release: str, tmp_path: Path
) -> None:
    """The same script through torch_npu's released codegen, with and without the records; where the installed
    torch_npu has a fix (its probe says "not needed"), both runs must generate the fixed code."""
    fixed_out, fixed = codegen(tmp_path, "with")
    plain_out, plain = codegen(tmp_path, "without", "--without-fix", *KERNEL_IDS)
    status = fixed["fixes"]
    assert all(status[fix_id] in ("applied", "not needed", "skipped") for fix_id in IDS), status
    assert plain["without_fix"] == sorted(KERNEL_IDS)

    # the survey reads the same wheel statically: carried exactly where the probe finds nothing to fix
    carried = verdicts(wheel_release)
    for fix_id in IDS:
        assert (carried[fix_id] == "carried") == (status[fix_id] != "applied"), (fix_id, carried, status)

    for summary in (fixed, plain):
        assert [graph["status"] for graph in summary["graphs"]] == ["ok", "ok"]
        assert summary["torch_npu_wheel"]["fallbacks"] == []

    # 1. slice_scatter over dynamic sizes: the shorter tensor's load keeps its guarding mask
    (scatter,) = harness.kernel_sources(fixed_out, fixed, 0).values()
    (scatter_plain,) = harness.kernel_sources(plain_out, plain, 0).values()
    assert "'grid_type': 'GridNpu'" in scatter and GUARDED_LOAD.search(scatter), scatter
    bug_shown = GUARDED_LOAD.search(scatter_plain) is None
    assert bug_shown == (status[torch_npu_backports.MASKED_LOAD_SIZE_SYMBOLS.id] == "applied"), scatter_plain

    # 2. softmax over 2048 elements per row on an Ascend910B3: a looped reduction, not a persistent one
    # (the heuristics decorator says which: reduction loops over the row, persistent_reduction holds it whole;
    # torch_npu's differ per release: triton_heuristics.reduction on 2.7.1, npu_triton_heuristics.reduction_npu_index
    # on 2.12)
    (softmax,) = harness.kernel_sources(fixed_out, fixed, 1).values()
    (softmax_plain,) = harness.kernel_sources(plain_out, plain, 1).values()
    assert reduction_kind(softmax) == "reduction", softmax
    bug_shown = reduction_kind(softmax_plain) == "persistent_reduction"
    assert bug_shown == (status[torch_npu_backports.PERSISTENT_REDUCTION_UB.id] == "applied"), softmax_plain

    # 3. where torch_npu's masked() ands a mask for the size symbol (2.13.0+), without the record its linear index
    # kernel fails on torch's sympy_index_symbol assertion and it falls back to no_linear for the slice_scatter
    if status[MASKED_SUBBLOCK] == "applied":
        _, lost = codegen(tmp_path, "without-masked", "--without-fix", MASKED_SUBBLOCK, ok=False)
        (fallback,) = lost["torch_npu_wheel"]["fallbacks"]
        assert fallback["fallback"] == "linear -> no_linear" and fallback["error"].startswith("AssertionError")
        assert fallback["kernels"] == list(lost["graphs"][0]["files"]["kernels"]), fallback


@pytest.mark.subprocess
@pytest.mark.download
def test_without_the_strict_sum_record_torch_npus_make_reduction_fails_every_sum(
    wheel_release: str, tmp_path: Path
) -> None:
    """torch 2.14's sum lowering passes strict_sum to make_reduction, which torch_npu 2.14.0 replaces with one that
    takes none: with the record both graphs compile; without it the same script fails to lower its sums with that
    TypeError. Before torch 2.14 nothing passes strict_sum (the test above checks the probe says "not needed")."""
    import inspect

    import torch
    from torch._inductor import lowering

    record = STRICT_SUM
    sum_lowering = inspect.unwrap(lowering.lowerings[torch.ops.aten.sum.dim_IntList])
    if "strict_sum" not in sum_lowering.__code__.co_varnames:  # the test above checks the probe's "not needed"
        assert verdicts(wheel_release)[record] == "carried"
        pytest.skip(f"torch {torch.__version__}'s sum lowering passes no strict_sum: nothing to show")
    _, fixed = codegen(tmp_path, "with-strict-sum")
    assert fixed["fixes"][record] == "applied" and verdicts(wheel_release)[record] == "not carried"
    assert [graph["status"] for graph in fixed["graphs"]] == ["ok", "ok"]
    _, plain = codegen(tmp_path, "without-strict-sum", "--without-fix", record, ok=False)
    failed = [graph["error"] or {} for graph in plain["graphs"] if graph["status"] != "ok"]
    assert failed and "unexpected keyword argument 'strict_sum'" in str(failed[0].get("message")), failed


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_range_split_fails_without_its_records_where_they_apply(wheel_release: str, tmp_path: Path) -> None:
    """A dynamic layer norm and an RMSNorm training step through torch_npu's released codegen: with the records
    every graph compiles. Where the split record applies (its probe ran torch_npu's split and got the Relational
    TypeError), the same script without the records fails the compile: with that TypeError, or, where the
    CantSplit record applies too (2.11.0.post3, 2.12.0.post3), with CantSplit's missing arguments."""
    _, fixed = codegen(tmp_path, "with", script=SPLIT_EXAMPLE)
    status = fixed["fixes"]
    assert {status[SPLIT], status[CANT_SPLIT]} <= {"applied", "not needed"}, status
    carried = verdicts(wheel_release)
    for fix_id in (SPLIT, CANT_SPLIT):
        assert (carried[fix_id] == "carried") == (status[fix_id] != "applied"), (fix_id, carried, status)
    assert [graph["status"] for graph in fixed["graphs"]] == ["ok"] * 4, fixed["graphs"]
    assert fixed["torch_npu_wheel"]["fallbacks"] == [] and fixed["static_check"]["failures"] == []
    if status[SPLIT] != "applied":
        return  # torch_npu decides the split itself; the CantSplit record is shown on its own code below
    applied = [fix_id for fix_id in (SPLIT, CANT_SPLIT) if status[fix_id] == "applied"]
    _, plain = codegen(tmp_path, "without", "--without-fix", *applied, ok=False, script=SPLIT_EXAMPLE)
    failed = [graph["error"] or {} for graph in plain["graphs"] if graph["status"] != "ok"]
    expected = "CantSplit.__init__() missing" if CANT_SPLIT in applied else "cannot determine truth value of Relational"
    assert failed and expected in str(failed[0].get("message")), failed


CANT_SPLIT_CHILD = """
    import json
    from npu_inductor_compat.activation import activate, deactivate
    from npu_inductor_compat.common.fixes import torch_npu_split_ranges as split_fixes
    from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel
    from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker

    def refusal():
        # torch_npu's own split (not the split record's) asked to cut a size of 3 out of a group of 4
        from types import SimpleNamespace
        from torch._inductor.virtualized import V

        sizes, _, _ = split_fixes.probe_sizes()
        with V.set_graph_handler(SimpleNamespace(sizevars=sizes)):
            try:
                split_fixes._torch_npus_split()([4], [[3], []])
            except Exception as err:
                from torch._inductor.codegen.simd import CantSplit
                return f"{'CantSplit' if isinstance(err, CantSplit) else type(err).__name__}: {err}"
        return "split"

    found = {}
    with torch_npu_wheel.wheel_run(checker=TtirCheckWorker):
        found["before"] = refusal()
        try:
            report = activate()
            found["status"] = {fix["id"]: fix["status"] for fix in report["fixes"]}[split_fixes.CANT_SPLIT_ARGUMENTS.id]
            found["active"] = refusal()
        finally:
            deactivate()
        found["after"] = refusal()
    print(json.dumps(found))
"""


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_own_split_refuses_with_a_cant_split_torch_accepts_under_the_record(
    wheel_release: str, run_python: Any
) -> None:
    """torch_npu's own split function, asked for a split it must refuse: on torch 2.11+ its bare `raise CantSplit`
    is a TypeError (2.11.0.post3 to 2.14.0), which the record turns into the CantSplit torch's callers catch,
    and deactivation puts back; on older torch the refusal is a CantSplit already and the record is not needed."""
    import textwrap

    done = run_python(textwrap.dedent(CANT_SPLIT_CHILD), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["active"].startswith("CantSplit: "), found
    assert found["after"] == found["before"], found
    if found["status"] == "applied":
        assert found["before"].startswith("TypeError: ") and "CantSplit" in found["before"], found
    else:
        assert found["status"] == "not needed" and found["before"].startswith("CantSplit: "), found


# max and min with their indices over 8192 elements a row: a looped reduction on every release (a persistent one
# holds at most 4096), whose kernel ends in max_with_index/min_with_index over the loop's carried accumulators
# (torch.max/min with a dim, not argmax/argmin: 2.12.0.post3 leaves aten.argmax to its extern kernel)
ARGMAX = """
import torch
import torch_npu

def extremes(t):
    return torch.max(t, dim=-1), torch.min(t, dim=-1)

x = torch.randn(8, 8192)
for got, expected in zip(torch.compile(extremes)(x.npu()), extremes(x)):
    assert got.indices.cpu().tolist() == expected.indices.tolist()
    torch.testing.assert_close(got.values.cpu(), expected.values)
"""
TTIR_CHILD = """
import json
from pathlib import Path
from npu_inductor_compat.tools.simulated.kernels.kernel_lowering import torch_npu_ttir
print(json.dumps(torch_npu_ttir([Path(file) for file in FILES], RELEASE)))
"""
REDUCE_OPERANDS = re.compile(r'"tt\.reduce"\(([^)]*)\)')


def reduce_operand_counts(run_python: Any, release: str, files: list[Path]) -> list[list[int]]:
    """Per kernel file, the operand count of each tt.reduce in the TTIR triton-ascend's front end builds from it
    through torch_npu's own precompile (kernel_lowering.torch_npu_ttir, under triton-ascend)."""
    try:
        site = triton_ascend_site.locate()
    except triton_ascend_site.KernelCheckUnavailable as err:
        pytest.skip(f"triton-ascend cannot be had: {err}")
    path = {key: value for key, value in triton_ascend_site.worker_env(site).items() if key == "PYTHONPATH"}
    code = TTIR_CHILD.replace("FILES", repr([str(file) for file in files])).replace("RELEASE", repr(release))
    done = run_python(code, env=path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    texts = json.loads(done.stdout.strip().splitlines()[-1])
    return [[len(found.split(",")) for found in REDUCE_OPERANDS.findall(texts[str(file)])] for file in files]


@pytest.mark.subprocess
@pytest.mark.download
def test_a_looped_argmax_reduces_value_and_index_apart_under_the_record(
    wheel_release: str, tmp_path: Path, run_python: Any
) -> None:
    """The wrong index itself needs an NPU; one level below it, the TTIR that triton-ascend's front end builds from
    torch_npu's own precompile shows the cause. With the record every tt.reduce of the argmax/argmin kernel takes one
    operand and every config lowers to linalg. Without it, the releases whose kernels call torch's max_with_index
    (the record applies) reduce (value, index) in one tt.reduce; where torch_npu has its own fix, neither run does."""
    script = tmp_path / "argmax.py"
    script.write_text(ARGMAX)
    fixed_out, fixed = codegen(tmp_path, "with", "--check-kernels", script=script)
    status = fixed["fixes"][ARGREDUCE]
    assert status in ("applied", "not needed"), status
    assert (verdicts(wheel_release)[ARGREDUCE] == "carried") == (status != "applied")
    assert fixed["kernel_check"]["configs"] > 0 and fixed["kernel_check"]["rejected"] == 0, fixed["kernel_check"]
    plain_out, plain = codegen(tmp_path, "without", "--without-fix", ARGREDUCE, script=script)
    (fixed_kernel,) = harness.kernel_sources(fixed_out, fixed, 0).values()
    (plain_kernel,) = harness.kernel_sources(plain_out, plain, 0).values()
    assert ("triton_argreduce.max_with_index(" in fixed_kernel) == (status == "applied"), fixed_kernel
    assert "triton_argreduce" not in plain_kernel and "for loop_r" in plain_kernel, plain_kernel

    files = [
        out / entry["source"]
        for out, summary in ((fixed_out, fixed), (plain_out, plain))
        for entry in summary["graphs"][0]["files"]["kernels"].values()
    ]
    with_record, without = reduce_operand_counts(run_python, wheel_release, files)
    assert with_record and set(with_record) == {1}, with_record
    assert (2 in without) == (status == "applied"), without
