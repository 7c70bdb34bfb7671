"""torch-npu-numels-pinned (common/fixes/torch_npu_hint_numels.py): the pin on a real ShapeEnv, then the record on
torch_npu's released codegen for one dynamic graph serving two sizes, its kernel run in Triton's interpreter at the
second."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernel and the wrapper's launch on the exact torch its wheel
# requires, triton-ascend's front end lowers each config, and the kernel runs in Triton's interpreter, launched as the
# wrapper launches it, on the second call's input. Without the record the same kernel leaves part of it unwritten.

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.fixes.torch_npu_hint_numels import NUMELS_AT_HINTS, pin_at_hints
from npu_inductor_compat.common.fixes.torch_npu_split_ranges import probe_sizes

RECORD = NUMELS_AT_HINTS.id
SCRIPT = ROOT / "examples" / "torch_npu_dynamic_numels.py"
# The releases whose initialize_range_tree substitutes the hints into a kernel's numels (codegen/triton.py)
AT_HINTS = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")
KERNEL = "triton_unk_fused_add_mul_relu_0"


def test_pinning_guards_each_backed_symbol_at_its_hint_and_leaves_unbacked_ones() -> None:
    import sympy

    sizes, rows, cols = probe_sizes()  # hints 4 and 8
    unbacked = sizes.shape_env.create_unbacked_symint().node.expr
    assert not isinstance(sizes.simplify(rows * cols), sympy.Integer)
    pinned = pin_at_hints(sizes, [rows * cols + unbacked, sympy.Integer(3)])
    assert pinned == sorted([(str(rows), 4), (str(cols), 8)]), pinned
    assert sizes.simplify(rows * cols) == 32  # the guards hold: the product is a number now
    assert sizes.simplify(unbacked) == unbacked
    assert {str(guard.expr) for guard in sizes.shape_env.guards} >= {f"Eq({rows}, 4)", f"Eq({cols}, 8)"}
    assert pin_at_hints(sizes, [rows * cols]) == []  # pinned once


# The kernel in Triton's interpreter (after harness.INTERPRETER_PREAMBLE), launched as the wrapper launches it, on the
# second call's input (80 rows of 32): how many output elements it wrote, and whether all are torch's
INTERPRETED = r"""
torch.manual_seed(0)
x, y = torch.randn(80, 32), torch.randn(80, 32)
expected = (x * 2 + y).relu()
results = []
for config in configs:
    out = torch.full((80, 32), float("nan"))
    error = launched(config, [x, y, out])
    written = int((~out.isnan()).sum())
    results.append({"error": error, "written": written, "right": error is None and torch.equal(out, expected)})
print(json.dumps({"results": results}))
"""


def _last_kernel_at_80_rows(out: Path, run: harness.Run) -> tuple[list[int], list[dict[str, object]]]:
    """The last graph's kernel (the one serving 80 rows): its launch's numels and its interpreted results."""
    graph = len(run.summary["graphs"]) - 1
    checked = run.summary["graphs"][graph]["kernel_check"][KERNEL]
    assert checked and all(result["ok"] for result in checked), checked
    source = harness.kernel_sources(out, run.summary, graph)[KERNEL]
    wrapper = (out / run.summary["graphs"][graph]["files"]["wrapper"]).read_text()
    configs = [result["config"] for result in checked]
    numels = _literal_numbers(wrapper, KERNEL)
    return numels, harness.interpret(INTERPRETED, source, wrapper, KERNEL, configs)["results"]


def _literal_numbers(wrapper: str, kernel: str) -> list[int]:
    """The numbers the wrapper passes kernel ``kernel`` as it is (its numels, where they are not computed)."""
    ((arguments,),) = [re.findall(rf"\b{kernel}\.run\(([^)]*)\)", wrapper)]
    return [int(value) for value in (part.strip() for part in arguments.split(",")) if value.isdigit()]


@pytest.mark.subprocess
@pytest.mark.download
def test_a_dynamic_graph_at_a_new_size_runs_a_kernel_of_that_size(tmp_path: Path) -> None:
    """40 rows, then 80, through one torch.compile(dynamic=True). With the record the releases that build kernels
    at the hints compile a second graph for 80 rows, launched with 2560 elements: in the interpreter every config
    writes torch's result. Without it the one graph launches its kernel with 1280 elements at 80 rows too: half of
    the outputs are never written. The other releases keep the numel symbolic: "not needed", no number."""
    release = harness.paired_release(AT_HINTS)
    graphs = 2 if release in AT_HINTS else 1
    run = harness.codegen(SCRIPT, (release,), tmp_path / "with", "--check-kernels", graphs=graphs)
    status = run.summary["fixes"][RECORD]
    if release not in AT_HINTS:  # `nox -s torch_npu_wheel`
        assert status == "not needed", status
        (name,) = run.summary["graphs"][0]["files"]["kernels"]
        wrapper = (tmp_path / "with" / run.summary["graphs"][0]["files"]["wrapper"]).read_text()
        assert _literal_numbers(wrapper, name) == [], wrapper
        return
    assert status == "applied" and run.returncode == 0 and run.problems == [], run.stderr[-3000:]
    numels, results = _last_kernel_at_80_rows(tmp_path / "with", run)
    assert numels == [2560] and results and all(result["right"] for result in results), (numels, results)

    without = ("--check-kernels", "--without-fix", RECORD)
    plain = harness.codegen(SCRIPT, (release,), tmp_path / "without", *without, graphs=1)
    numels, results = _last_kernel_at_80_rows(tmp_path / "without", plain)
    assert numels == [1280], numels
    assert results and all(result["written"] == 1280 and not result["right"] for result in results), results


@pytest.mark.subprocess
@pytest.mark.download
def test_execute_names_the_half_written_kernel_without_the_record_and_matches_with_it(tmp_path: Path) -> None:
    """The same two sizes under `codegen --execute`, the wrapper as torch_npu wrote it run with every config in
    Triton's interpreter: without the record the graph's second call (80 rows) is a mismatch pinned on the kernel,
    half of its output unwritten, and the run exits 1; with it both graphs match eager."""
    release = harness.paired_release(AT_HINTS)
    if release not in AT_HINTS:
        pytest.skip(f"torch_npu {release} keeps the numel symbolic: the record is not needed there")
    run = harness.codegen(SCRIPT, (release,), tmp_path / "with", "--execute", graphs=2)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [graph["execution"]["status"] for graph in run.summary["graphs"]] == ["match", "match"]

    plain = harness.codegen(SCRIPT, (release,), tmp_path / "without", "--execute", "--without-fix", RECORD, graphs=1)
    assert plain.returncode == 1, plain.stderr[-3000:]
    execution = plain.summary["graphs"][0]["execution"]
    assert execution["status"] == "mismatch" and execution["first_wrong"]["kernel"] == KERNEL, execution
    assert execution["first_wrong"]["detail"]["elements"] == 1280, execution["first_wrong"]
    assert f"kernel {KERNEL}" in plain.stderr
