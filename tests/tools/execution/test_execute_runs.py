"""`codegen --execute` run as a user runs it: what Inductor generated (torch_npu's codegen where this torch has a
paired release, stock Inductor beside it) executed and judged against eager, on right code and on wrong code."""

# The NPU kernels cannot run here, so the generated code is run one level below the device: the real wrapper as
# Inductor (or torch_npu) wrote it, each Triton kernel in Triton's interpreter through its autotuner's own launch
# path, the externs on the CPU. The wrong code is real generated code too: Inductor's own codegen, planted with a bug
# (tests/scripts/planted_wrong_sigmoid.py), and torch_npu's released codegen without the record that fixes it.

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT, TESTS

pytestmark = pytest.mark.subprocess

SCRIPTS = TESTS / "scripts"
PROVIDERS = [pytest.param(None, id="default"), pytest.param("stock", id="stock")]


class Run(NamedTuple):
    code: int
    stderr: str
    summary: dict[str, Any]


def execute(script: Path, out: Path, *flags: str, provider: str | None = None) -> Run:
    done = run_codegen(script, "--execute", *flags, out=out, provider=provider)  # None: codegen's default
    assert done.summary is not None, done.stderr[-3000:]
    return Run(done.returncode, done.stderr, done.summary)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_right_code_matches_eager_forward_and_backward_with_every_config(tmp_path: Path, provider: str | None) -> None:
    run = execute(ROOT / "examples" / "pointwise_reduction.py", tmp_path / "out", provider=provider)
    assert run.code == 0, run.stderr[-3000:]
    executions = [graph["execution"] for graph in run.summary["graphs"]]
    assert [execution["status"] for execution in executions] == ["match", "match"], run.stderr[-3000:]
    for execution in executions:  # every config of every kernel ran, and each agreed
        assert execution["configs"] >= execution["launches"] >= 1
        assert all(kernel["status"] == "match" for kernel in execution["kernels"].values())
    assert run.summary["execution"]["graphs"] == {"match": 2, "mismatch": 0, "error": 0, "not run": 0}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_kernel_is_named_not_the_kernels_after_it_and_the_run_exits_1(
    tmp_path: Path, provider: str | None
) -> None:
    run = execute(SCRIPTS / "planted_wrong_sigmoid.py", tmp_path / "out", provider=provider)
    assert run.code == 1, run.stderr[-3000:]
    (graph,) = run.summary["graphs"]
    execution = graph["execution"]
    assert execution["status"] == "mismatch"
    assert "sigmoid" in execution["first_wrong"]["kernel"] and execution["first_wrong"]["against"] == "eager"
    kernels = execution["kernels"]
    wrong = sorted(name for name, kernel in kernels.items() if kernel["status"] == "mismatch")
    assert len(wrong) == 2 and any("relu" in name for name in wrong)  # after the matmul, wrong from its input
    assert all(kernel["status"] == "match" for name, kernel in kernels.items() if "sin_" in name)
    assert f"kernel {execution['first_wrong']['kernel']}" in run.stderr
    assert [value["status"] for value in execution["values"]] == ["mismatch"]


def test_an_output_rng_made_is_reported_random_and_the_rest_still_compared(tmp_path: Path) -> None:
    run = execute(SCRIPTS / "dropout_and_sum.py", tmp_path / "out")
    assert run.code == 0, run.stderr[-3000:]
    (graph,) = run.summary["graphs"]
    statuses = {value["value"]: value["status"] for value in graph["execution"]["values"]}
    assert graph["execution"]["status"] == "match", statuses
    assert "random" in statuses.values() and "mismatch" not in statuses.values(), statuses
    assert [status for value, status in statuses.items() if value.endswith("(sum_1)")] == ["match"], statuses


def test_libdevice_math_runs_as_torch_functions_and_matches(tmp_path: Path) -> None:
    run = execute(SCRIPTS / "libdevice_math.py", tmp_path / "out")
    assert run.code == 0, run.stderr[-3000:]
    (graph,) = run.summary["graphs"]
    assert graph["execution"]["status"] == "match", graph["execution"]
    assert graph["execution"]["launches"] >= 1


def test_max_configs_runs_each_kernels_first_configs_and_counts_the_rest(tmp_path: Path) -> None:
    run = execute(ROOT / "examples" / "pointwise_reduction.py", tmp_path / "out", "--max-configs", "1")
    assert run.code == 0, run.stderr[-3000:]
    done = run.summary["execution"]
    kernels = [kernel for graph in run.summary["graphs"] for kernel in graph["execution"]["kernels"].values()]
    assert done["configs"] == done["launches"] == len(kernels) == 2 and done["graphs"]["match"] == 2
    skipped = done["configs_not_run"]
    assert skipped == sum(graph["execution"]["configs_not_run"] for graph in run.summary["graphs"])
    assert (f"{skipped} config(s) not run (--max-configs)" in run.stderr) == (skipped > 0)


def test_a_graph_called_at_two_sizes_counts_the_launches_of_both(tmp_path: Path) -> None:
    """A dynamic graph is executed at the first call of each set of sizes; its verdict is the worse of the two, and
    its launches, config runs and seconds are both calls' (they once were the first call's only). Stock Inductor's
    codegen: torch_npu 2.9.1's compiles this script's graph once per size, so no graph of its serves two."""
    run = execute(SCRIPTS / "two_sizes.py", tmp_path / "out", provider="stock")
    assert run.code == 0, run.stderr[-3000:]
    (graph,) = run.summary["graphs"]
    execution = graph["execution"]
    assert execution["status"] == "match", execution
    assert execution["launches"] == 2 * len(execution["kernels"]) >= 2, execution
    assert run.summary["execution"]["launches"] == execution["launches"]
