"""torch_npu's own TTIR check, run for real in a triton-ascend worker, and ``--check-kernels`` on its kernels."""

# torch_npu's scheduling compiles each "linear" kernel to TTIR before defining it (make_ttir_for_check) and falls back
# to its "no_linear" kernel when that raises. The codegen process cannot run it (its ``triton`` is torch's), so the
# ``torch-npu-wheel-ttir-check`` record sends each kernel's source to a worker process (ttir_check.py
# TtirCheckWorker) that runs torch_npu's own function over triton-ascend. These tests show the check passing for good
# kernels, failing with the compiler's words for a kernel triton-ascend rejects (fp64), torch_npu's fallback then
# taken and reported, and the worker's failures surfacing as errors, never as passes.
#
# What loads torch_npu's ``_inductor`` runs in other processes (it patches torch for good): the codegen command and
# the worker. Skipped, saying why, where the installed torch has no paired torch_npu release with a TTIR check, its
# wheel or triton-ascend cannot be had, or torch_npu's Python dependencies are missing.

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.tools.simulated.kernels import (
    torch_npu_bridges,
    triton_ascend_site,
    ttir_check,
    ttir_check_worker,
)
from npu_inductor_compat.tools.simulated.wheel import wheel_release, wheel_stubs, wheel_targets

pytestmark = [pytest.mark.subprocess, pytest.mark.download]

EXAMPLE = ROOT / "examples" / "pointwise_reduction.py"
WHEEL_PYTHON_DEPENDENCIES = ("yaml", "psutil")  # what torch_npu's Python code imports (test_torch_npu_wheel.py)
PLACEHOLDER = "Placeholder.KERNEL_NAME"  # str(torch._inductor.utils.Placeholder.KERNEL_NAME): the name in the check

# fp64 pointwise kernel: triton-ascend rejects fp64 ("[fp8, fp64] is unsupported on Ascend")
FP64 = """
import torch

def double(x):
    return (x.double() * 3.0).exp()

x = torch.randn(8, 33)
torch.testing.assert_close(torch.compile(double)(x.to("npu")).cpu(), double(x))
"""

# two dropouts in two kernels: the second reads its seed at offset 1, an argument equal to 1, which the codegen
# process's triton (3.3 on) has torch type "constexpr"; triton-ascend 3.2's code generator knows no such type
TWO_DROPOUTS = """
import torch
import torch_npu


def f(x, m):
    a = torch.nn.functional.dropout(x.softmax(-1), 0.1, training=True)
    return torch.nn.functional.dropout((a @ a + m).softmax(-1), 0.1, training=True)


torch.compile(f)(torch.randn(2, 4, 8, 8, device="npu"), torch.randn(2, 1, 1, 8, device="npu"))
"""


# ------------------------------------------------------------------------------------------------ in this process
def test_the_bridge_table_says_why_what_and_where_for_every_entry() -> None:
    names = [bridge.name for bridge in torch_npu_bridges.BRIDGES]
    assert len(names) == len(set(names))
    for bridge in torch_npu_bridges.BRIDGES:
        assert ":" in bridge.name and all(bridge.name.split(":")), bridge.name
        assert bridge.why.strip() and bridge.returns.strip() and bridge.source.strip(), bridge.name
        assert "triton-ascend" in bridge.source, bridge.name  # each stands for a real triton-ascend source


def test_the_compiler_message_keeps_the_error_and_drops_the_workers_stack() -> None:
    class NoTritonConfigsError(RuntimeError):
        pass

    error = NoTritonConfigsError(
        "Failed to compile config X0BLOCK: 1 for make ttir triton_: at 3:4:\nboom \nStack trace:x"
    )
    assert ttir_check_worker._check_message(error) == (
        "NoTritonConfigsError: Failed to compile config X0BLOCK: 1 for make ttir triton_: at 3:4:\nboom"
    )


def test_a_worker_that_cannot_start_makes_every_check_an_error_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No triton-ascend where it is said to be: each check is an error naming that, never a pass; no retry per
    kernel."""
    monkeypatch.setenv(triton_ascend_site.SITE_ENV, str(tmp_path))
    worker = ttir_check.TtirCheckWorker("2.7.1.post11", "a.b:C.make_ttir_for_check")
    try:
        for _ in range(2):
            answer = worker.check("source")
            assert answer["result"] == "error", answer
            assert answer["error"].startswith("the TTIR-check worker could not start: ")
            assert "has no triton/backends/ascend/compiler.py" in answer["error"]
        assert worker.describe()["starts"] == 0 and worker.describe()["error"] == answer["error"]
    finally:
        worker.close()


# ------------------------------------------------------------------------------------------------ in other processes
@pytest.fixture(scope="module")
def paired() -> str:
    """The torch_npu release paired with this torch, when it can be run here with triton-ascend."""
    import torch

    try:
        paired = wheel_release.paired_release(torch.__version__)
    except wheel_release.WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    missing = [name for name in WHEEL_PYTHON_DEPENDENCIES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"torch_npu {paired}'s Python code imports {', '.join(missing)}, not installed here")
    try:
        wheel_release.unpacked(paired)
    except wheel_release.WheelUnavailable as err:
        pytest.skip(f"the torch_npu {paired} wheel cannot be had: {err}")
    try:
        triton_ascend_site.locate()
    except triton_ascend_site.KernelCheckUnavailable as err:
        pytest.skip(f"triton-ascend unavailable: {err}")
    return paired


@pytest.fixture(scope="module")
def release(paired: str) -> str:
    """The paired release, when it has a TTIR check (2.12's scheduling has none: one index kernel, no fallback)."""
    targets = wheel_targets.release_targets(paired)
    if targets.ttir_check is None:
        pytest.skip(f"torch_npu {paired} has no TTIR check ({targets.layout})")
    return paired


def codegen(cwd: Path, script: Path, *flags: str) -> tuple[Any, dict[str, Any]]:
    done = run_codegen(script, *flags, out=cwd / "out", provider="torch_npu-wheel", cwd=cwd, timeout=1800)
    assert done.summary is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return done, done.summary


@pytest.fixture(scope="module")
def pointwise_run(paired: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, dict[str, Any]]:
    """pointwise_reduction.py through codegen --provider torch_npu-wheel --check-kernels, once."""
    cwd = tmp_path_factory.mktemp("pointwise")
    done, summary = codegen(cwd, EXAMPLE, "--check-kernels")
    return cwd / "out", done, summary


def test_every_config_of_torch_npus_kernels_lowers_through_its_own_precompile(
    paired: str, pointwise_run: tuple[Path, Any, dict[str, Any]]
) -> None:
    """--check-kernels with this provider: every autotune config of torch_npu's kernels, through torch_npu's own
    precompile up to triton.compile, then triton-ascend's stages to linalg."""
    _, done, summary = pointwise_run
    assert done.returncode == 0, done.stderr[-3000:]
    check = summary["kernel_check"]
    assert check["torch_npu"] == paired and check["rejected"] == 0 and check["error"] is None, check
    # the worker's triton is triton-ascend: every stub of a triton-ascend name gives way to the real module
    triton_stubs = {
        stub.name
        for stub in wheel_stubs.STUBS
        if stub.module.partition(".")[0] == "triton" and stub.kind == "attribute"
    }
    assert "triton.language.extra.ascend:libdevice" in triton_stubs
    assert set(check["unstubbed"]) == triton_stubs, check["unstubbed"]
    assert set(check["bridges"]) <= {bridge.name for bridge in torch_npu_bridges.BRIDGES}
    assert check["configs"] > len(summary["graphs"])
    for graph in summary["graphs"]:
        assert set(graph["kernel_check"]) == set(graph["kernels"])
        for results in graph["kernel_check"].values():
            assert results and all(result["ok"] and result["stage"] == "linalg" for result in results), results
            assert any("_SUB" in key for key in results[0]["config"])  # torch_npu's sub-block tiling
    assert "to linalg" in done.stdout and "every kernel config lowered" in done.stdout


def test_torch_npus_kernels_pass_its_real_ttir_check(
    release: str, pointwise_run: tuple[Path, Any, dict[str, Any]]
) -> None:
    out, done, summary = pointwise_run
    assert done.returncode == 0, done.stderr[-3000:]
    report = summary["torch_npu_wheel"]
    assert report["fallbacks"] == []
    kernels = {name for graph in summary["graphs"] for name in graph["kernels"]}
    assert len(kernels) == 2
    # one real check per kernel, passed, attributed to it
    assert sorted(kernel for check in report["checks"] for kernel in check["kernels"]) == sorted(kernels)
    for check in report["checks"]:
        assert check["check"] == "ttir" and check["result"] == "passed" and check["error"] is None, check
        assert check["where"].endswith(":NPUTritonScheduling.make_ttir_for_check")
    for graph in summary["graphs"]:
        assert graph["torch_npu_events"] == {name: ["check ttir: passed"] for name in graph["kernels"]}
        for name, entry in graph["files"]["kernels"].items():  # torch_npu's linear kernels, markers intact
            source = (out / entry["source"]).read_text()
            assert "'inductor_ascend_linear_mode': 'linear'" in source and "'grid_type': 'GridNpu'" in source, name
    # how it ran: torch_npu's function in one worker over triton-ascend, with what was unstubbed and bridged
    ttir = report["ttir_check"]
    assert ttir["starts"] == 1 and ttir["error"] is None and ttir["missing_stubs"] == []
    assert ttir["triton_ascend"] == triton_ascend_site.locate().version and f"torch_npu {release}'s own" in ttir["runs"]
    triton_stubs = {
        stub.name
        for stub in wheel_stubs.STUBS
        if stub.module.partition(".")[0] == "triton" and stub.kind == "attribute"
    }
    assert set(ttir["unstubbed"]) == triton_stubs, ttir["unstubbed"]
    assert set(ttir["bridges"]) <= {bridge.name for bridge in torch_npu_bridges.BRIDGES}
    assert summary["kernel_check"]["bridges"] == ttir["bridges"]  # the same environment in both workers


def test_the_worker_answers_passed_failed_and_died_and_starts_afresh(
    release: str, pointwise_run: tuple[Path, Any, dict[str, Any]]
) -> None:
    """The worker on its own: the source torch_npu checks (the written kernel, named back to the placeholder)."""
    out, _, summary = pointwise_run
    name, entry = next(iter(summary["graphs"][-1]["files"]["kernels"].items()))
    source = (out / entry["source"]).read_text().replace(name, PLACEHOLDER)
    target = wheel_targets.release_targets(release).ttir_check
    assert target is not None
    worker = ttir_check.TtirCheckWorker(release, target)
    try:
        assert worker.check(source)["result"] == "passed"
        rejected = worker.check(source.replace("'*fp32'", "'*fp64'"))
        assert rejected["result"] == "failed" and "fp64] is unsupported on Ascend" in rejected["error"], rejected
        assert "NoTritonConfigsError" in rejected["error"] and "Stack trace" not in rejected["error"]
        # a worker dying inside a check: an error saying so, with what it printed; the next check starts a new one
        dying = "import os\nos._exit(3)\ndef f(\n    inductor_meta={},\n):\n    pass\n"
        died = worker.check(dying)
        assert died["result"] == "error", died
        assert died["error"].startswith("the TTIR-check worker died (exit status 3) while checking this kernel")
        assert worker.check(source)["result"] == "passed"
        assert worker.describe()["starts"] == 2
    finally:
        worker.close()
    assert worker._process is None


def test_a_kernel_triton_ascend_rejects_fails_the_check_and_torch_npu_falls_back(release: str, tmp_path: Path) -> None:
    script = tmp_path / "fp64.py"
    script.write_text(FP64)
    done, summary = codegen(tmp_path, script)
    assert done.returncode == 1  # a fallback torch_npu took fails the run
    report = summary["torch_npu_wheel"]
    [graph] = summary["graphs"]
    [kernel] = graph["kernels"]
    assert graph["status"] == "ok"
    [check] = report["checks"]
    assert check["result"] == "failed" and check["kernels"] == [kernel], check
    assert "[fp8, fp64] is unsupported on Ascend" in check["error"]
    # torch_npu's own fallback was taken, for the check's error, and reported for the kernel it produced
    [fallback] = report["fallbacks"]
    assert fallback["fallback"] == "linear -> no_linear" and fallback["kernels"] == [kernel]
    assert fallback["error"].startswith("TtirCheckFailed: torch_npu's TTIR check failed: NoTritonConfigsError")
    events = graph["torch_npu_events"][kernel]
    assert [event.split(":", 1)[0] for event in events] == ["check ttir", "fallback linear -> no_linear"]
    source = (tmp_path / "out" / graph["files"]["kernels"][kernel]["source"]).read_text()
    assert "'inductor_ascend_linear_mode': 'no_linear'" in source
    assert "torch_npu's TTIR check rejected 1 kernel(s)" in done.stderr and "fp64] is unsupported" in done.stderr
    assert "torch_npu took 1 fallback(s)" in done.stderr


def test_an_argument_equal_to_1_is_checked_and_lowered_in_the_form_the_host_writes(
    release: str, tmp_path: Path
) -> None:
    """torch writes a kernel's triton_meta for the installed triton: here torch's (3.3 on) gives an argument equal to
    1 the type "constexpr"; on a host, where triton-ascend 3.2 is the triton, it keeps its integer type and is in
    the AttrsDescriptor's equal_to_1 (host_triton_meta.py). Both workers check the kernel in the host's form: without
    it, torch_npu's TTIR check fails and it falls back, and every config of the fallback kernel is rejected."""
    script = tmp_path / "two_dropouts.py"
    script.write_text(TWO_DROPOUTS)
    done, summary = codegen(tmp_path, script, "--check-kernels")
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    sources = {
        name: (out / entry["source"]).read_text()
        for graph in summary["graphs"]
        for name, entry in graph["files"]["kernels"].items()
    }
    assert any("'load_seed_offset': 'constexpr'" in source for source in sources.values()), list(sources)
    report = summary["torch_npu_wheel"]
    assert report["fallbacks"] == [] and len(report["checks"]) == len(sources) == 2
    assert all(check["result"] == "passed" for check in report["checks"]), report["checks"]
    assert summary["kernel_check"]["rejected"] == 0 and summary["kernel_check"]["configs"] > 2
