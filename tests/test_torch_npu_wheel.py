"""torch_npu's own Inductor code from its released wheel on the simulated NPU (tools/simulated/torch_npu_wheel.py).

What loads torch_npu's ``_inductor`` runs in fresh interpreters: it patches torch for the rest of the process (it has
no undo). Skipped, saying why, where the installed torch has no paired torch_npu release with a stub table, where
its wheel cannot be downloaded, or where torch_npu's Python dependencies are missing from this environment.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.tools.simulated import torch_npu_wheel
from npu_inductor_compat.tools.simulated.torch_npu_wheel import STUBS, WheelUnavailable

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pointwise_reduction.py"
ENV_KEYS = ("NPU_INDUCTOR_COMPAT_AUTOLOAD", "NPU_INDUCTOR_COMPAT_TORCH_VERSION", "TORCHINDUCTOR_NPU_BACKEND")
# torch_npu's Python code imports these at load: pyyaml (its declared dependency, through torchnpugen and torchgen)
# and psutil (imported by _inductor/experimental/dynamic_filter/autotune_stats.py, not declared by the wheel)
WHEEL_PYTHON_DEPENDENCIES = ("yaml", "psutil")
HEURISTICS_IMPORT = r"^from torch_npu\._inductor(\.runtime)? import (npu_)?triton_heuristics\b"


# ------------------------------------------------------------------------------------------------ in this process
def test_the_stub_table_says_why_what_and_where_for_every_entry() -> None:
    names = [stub.name for stub in STUBS]
    assert len(names) == len(set(names)), "a symbol is stubbed twice"
    for stub in STUBS:
        assert ":" in stub.name and all(stub.name.split(":")), stub.name
        assert stub.why.strip() and stub.returns.strip() and stub.source.strip(), stub.name
        assert stub.kind in ("attribute", "schemas"), stub.name
    assert {stub.module for stub in STUBS} >= {"torch_npu._C", "torch_npu._C._profiler"}


def test_only_pure_python_members_of_the_wheel_are_unpacked() -> None:
    keep = torch_npu_wheel._keep
    assert keep("torch_npu/_inductor/__init__.py") and keep("torchnpugen/aoti/fallback_ops.py")
    assert keep("torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml")
    for member in (
        "torch_npu/_C.cpython-311-x86_64-linux-gnu.so",
        "torch_npu/lib/libtorch_npu.so",
        "torch_npu/include/acl/acl.h",
        "torch_npu-2.7.1.post11.dist-info/METADATA",
        "torch_npu.libs/libgomp.so.1",
        "torch_npu/dynamo/torchair/core/_torchair.so",
    ):
        assert not keep(member), member
    assert torch_npu_wheel._native_module("torch_npu/_C.cpython-311-x86_64-linux-gnu.so") == "torch_npu._C"
    assert torch_npu_wheel._native_module("torch_npu/lib/libtorch_npu.so") is None


def test_a_torch_line_without_a_stubbed_release_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for line in ("2.8.0", "2.15.0"):
        with pytest.raises(WheelUnavailable, match=f"no torch_npu release is paired with torch {line[:-2]}"):
            torch_npu_wheel.paired_release(line)
    # a line whose paired release exists but is not stubbed yet says why
    monkeypatch.setitem(torch_npu_wheel.NOT_YET, "2.13", "torch_npu 2.13.0 is not stubbed yet")
    with pytest.raises(WheelUnavailable, match=r"torch 2\.13\.0: torch_npu 2\.13\.0 is not stubbed yet"):
        torch_npu_wheel.paired_release("2.13.0")
    assert torch_npu_wheel.paired_release("2.7.1") == "2.7.1.post11"
    assert torch_npu_wheel.paired_release("2.9.1") == "2.9.0.post9"
    assert torch_npu_wheel.paired_release("2.12.1") == "2.12.0.post3"


def _defines(tree: torch_npu_wheel.WheelTree, target: str) -> bool:
    """Whether the wheel's source defines ``module:Class.method`` (read, not imported)."""
    import ast

    module, _, qualified = target.partition(":")
    owner, _, method = qualified.partition(".")
    path = tree.root.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        return False
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            return any(isinstance(item, ast.FunctionDef) and item.name == method for item in node.body)
    return False


def test_each_paired_release_names_its_record_targets_as_its_wheel_has_them() -> None:
    """RELEASES, the per-release targets of the provider's records, against each paired wheel's own source: a named
    target is defined there; where none is named, the release has no such code at all."""
    from npu_inductor_compat.tools import survey

    assert set(torch_npu_wheel.PAIRED.values()) <= set(torch_npu_wheel.RELEASES)
    checked = 0
    for release in torch_npu_wheel.PAIRED.values():
        if survey.cached_wheel(release, survey.default_cache_dir()) is None:
            continue  # not downloaded here (the child tests skip too)
        tree = torch_npu_wheel.unpacked(release)
        sources = "\n".join(path.read_text() for path in (tree.package / "_inductor").rglob("*.py"))
        targets = torch_npu_wheel.release_targets(release)
        for target, absent in (
            (targets.ttir_check, "def make_ttir_for_check("),
            (targets.linear_fallback, "no_linear"),
            (targets.backend_hash, "def patch_triton_hash("),
        ):
            if target is None:
                assert absent not in sources, (release, absent)
            else:
                assert _defines(tree, target), (release, target)
        dynamo = (tree.package / "utils" / "_dynamo.py").read_text()
        patches = re.search(r"def add_dynamo_methods\(\):\n((?:    .*\n|\n)*)", dynamo)
        assert targets.has_triton_at_import == bool(patches and "patch_has_triton()" in patches.group(1)), release
        checked += 1
    if not checked:
        pytest.skip("no paired torch_npu wheel is downloaded here")


# ------------------------------------------------------------------------------------------------ in a child
@pytest.fixture(scope="module")
def wheel_tree() -> torch_npu_wheel.WheelTree:
    import torch

    try:
        release = torch_npu_wheel.paired_release(torch.__version__)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu wheel to run on this torch line: {err}")
    missing = [name for name in WHEEL_PYTHON_DEPENDENCIES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"torch_npu {release}'s Python code imports {', '.join(missing)}, not installed here")
    try:
        return torch_npu_wheel.unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"the torch_npu {release} wheel cannot be had: {err}")


CHILD = """
    import importlib.metadata, json, runpy, sys
    import torch
    from npu_inductor_compat.activation import activate, deactivate
    from npu_inductor_compat.tools.simulated import torch_npu_wheel
    from npu_inductor_compat.tools.simulated.capture import capturing

    example, remove, disable = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    torch_npu_wheel.STUBS = tuple(stub for stub in torch_npu_wheel.STUBS if stub.name not in remove)
    from torch._dynamo import device_interface
    meta_path, modules = list(sys.meta_path), set(sys.modules)
    def npu_interfaces():
        return {key: value for key, value in device_interface.device_interfaces.items() if key.split(":")[0] == "npu"}
    interfaces = npu_interfaces()
    result = {}
    try:
        with torch_npu_wheel.wheel_run() as (use, provider, events):
            activate(disable=disable)
            try:
                with capturing() as capture:
                    runpy.run_path(example, run_name="__main__")
            finally:
                deactivate()
        result["graphs"] = [
            {"status": graph.status, "error": graph.error and graph.error["message"], "kernels": graph.kernels}
            for graph in capture.graphs
        ]
        result["events"] = events.summary()
        result["by_kernel"] = events.by_kernel()
        result["standin"] = use.summary()
    except Exception as err:
        result["error"] = f"{type(err).__name__}: {err}"
    import triton.language.extra
    result["restored"] = {
        "meta_path": sys.meta_path == meta_path,
        "modules_left": sorted(
            name for name in set(sys.modules) - modules if name.partition(".")[0] in ("torch_npu", "torchnpugen")
            or name.startswith("triton.language.extra.ascend")
        ),
        "triton_extra_ascend": hasattr(triton.language.extra, "ascend"),
        "npu_ops": hasattr(torch.ops.npu, "npu_dtype_cast"),
        "inductor_config": (torch._inductor.config.allow_buffer_reuse, torch._inductor.config.trace.enabled),
        "torch_npu_on_npu_module": sorted(name for name in vars(torch.npu) if name in ("_backends", "_initialized")),
        "device_interfaces": npu_interfaces() == interfaces,
    }
    try:
        importlib.metadata.distribution("torch_npu")
        result["distribution"] = True
    except importlib.metadata.PackageNotFoundError:
        result["distribution"] = False
    print("RESULT " + json.dumps(result))
"""


def run_child(cwd: Path, remove: tuple[str, ...] = (), disable: tuple[str, ...] = ()) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(EXAMPLE), json.dumps(remove), json.dumps(disable)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
        cwd=cwd,
    )
    assert not list(cwd.iterdir()), f"the run wrote into its working directory: {sorted(cwd.iterdir())}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-6000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def assert_restored(result: dict[str, Any]) -> None:
    assert result["restored"] == {
        "meta_path": True,
        "modules_left": [],
        "triton_extra_ascend": False,
        "npu_ops": False,
        "inductor_config": [True, False],
        "torch_npu_on_npu_module": [],
        "device_interfaces": True,
    }
    assert result["distribution"] is False


def test_the_kernels_are_torch_npus_and_nothing_fell_back(
    wheel_tree: torch_npu_wheel.WheelTree, tmp_path: Path
) -> None:
    result = run_child(tmp_path)
    assert "error" not in result, result["error"]
    targets = torch_npu_wheel.release_targets(wheel_tree.version)
    graphs = result["graphs"]
    assert [graph["status"] for graph in graphs] == ["ok", "ok"], graphs
    kernels = {name: source for graph in graphs for name, source in graph["kernels"].items()}
    assert len(kernels) == 2, list(kernels)
    for name, source in kernels.items():
        # torch_npu's markers, generated by its scheduling, index kernel and heuristics
        assert "'grid_type': 'GridNpu'" in source, name
        assert "'mix_mode': 'aiv'" in source, name
        assert "cc='Ascend910B3'" in source and "multi_processor_count=40" in source, name
        # its heuristics module: _inductor/runtime/triton_heuristics.py, _inductor/npu_triton_heuristics.py (2.12)
        assert re.search(HEURISTICS_IMPORT, source, re.M), name
        if targets.linear_fallback is not None:  # the release chooses between its linear and no_linear kernels
            assert "'inductor_ascend_linear_mode': 'linear'" in source, name
    # the reduction: torch_npu's persistent reduction heuristic (named triton_per_..., or triton_unk_... by 2.12)
    reduction = next(source for source in kernels.values() if "persistent_reduction" in source)
    assert "'axis_names': ['x0', 'r1']" in reduction
    assert "X0BLOCK_SUB : tl.constexpr" in reduction and "x0_offset = tl.program_id(0) * X0BLOCK" in reduction
    assert result["events"]["fallbacks"] == []
    if targets.ttir_check is not None:  # every kernel is reported with torch_npu's TTIR check, which passed
        assert result["by_kernel"] == {name: ["check ttir: passed"] for name in kernels}
    else:  # a release without the check (2.12): nothing to report
        assert result["by_kernel"] == {}
    # torch_npu's loading changes Inductor options: reported; its debug trace (files in the working directory) off
    changes = result["events"]["config_changes"]
    assert changes["allow_buffer_reuse"] == {"before": "True", "after": "False"}
    if "trace.enabled" in changes:  # 2.7.1.post11's ascend_npu_ir config turns it on
        assert changes["trace.enabled"]["after"] == "True" and changes["trace.enabled"]["codegen"].startswith("False")
    wheel = result["standin"]["wheel"]
    assert wheel["torch_npu"] == wheel_tree.version and wheel["missing_stubs"] == []
    assert_restored(result)
    # the unpacked tree holds no native code and no distribution metadata
    assert not list(wheel_tree.root.rglob("*.so")) and not list(wheel_tree.root.glob("*.dist-info"))


def test_a_fallback_torch_npu_takes_is_reported_per_kernel(
    wheel_tree: torch_npu_wheel.WheelTree, tmp_path: Path
) -> None:
    # Without the TTIR-check replacement, torch_npu's check fails here (no triton-ascend in this process) and it
    # falls back, logging at debug level only, to its no_linear kernel: the report must say so for each kernel.
    targets = torch_npu_wheel.release_targets(wheel_tree.version)
    if targets.linear_fallback is None:
        pytest.skip(f"torch_npu {wheel_tree.version} has no linear -> no_linear fallback: {targets.layout}")
    result = run_child(tmp_path, disable=("torch-npu-wheel-ttir-check",))
    assert "error" not in result, result["error"]
    fallbacks = result["events"]["fallbacks"]
    assert len(fallbacks) == 2, fallbacks
    kernels = {name for graph in result["graphs"] for name in graph["kernels"]}
    assert {kernel for event in fallbacks for kernel in event["kernels"]} == kernels
    for event in fallbacks:
        assert event["fallback"] == "linear -> no_linear" and event["error"], event
    assert all(
        any(entry.startswith("fallback linear -> no_linear") for entry in entries)
        for entries in result["by_kernel"].values()
    )
    assert_restored(result)


def test_a_stub_missing_from_the_table_fails_loudly_naming_it(
    wheel_tree: torch_npu_wheel.WheelTree, tmp_path: Path
) -> None:
    # a stub the release reaches while its backend loads: 2.7's config reads the SoC; 2.9+ register torch_npu's
    # dynamo interface (utils/_dynamo_device.py imports the raw-stream getter)
    reached = {
        "2.7.1.post11": "_npu_get_soc_version",
        "2.9.0.post9": "_npu_getCurrentRawStream",
        "2.12.0.post3": "_npu_getCurrentRawStream",
    }
    assert wheel_tree.version in reached, f"name a stub torch_npu {wheel_tree.version} reaches while loading"
    removed = f"torch_npu._C:{reached[wheel_tree.version]}"
    result = run_child(tmp_path, remove=(removed,))
    assert "error" in result
    assert "MissingStub" in result["error"] and f"reached {removed}," in result["error"], result["error"]
    assert_restored(result)


def test_the_codegen_command_with_this_provider_writes_torch_npus_kernels_and_reports_per_kernel(
    wheel_tree: torch_npu_wheel.WheelTree, tmp_path: Path
) -> None:
    """`codegen --provider torch_npu-wheel`: the real pipeline with torch_npu's released codegen, through the CLI."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(EXAMPLE), "--provider", "torch_npu-wheel"]
    env = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
    done = subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provider"] == "torch_npu-wheel" and summary["torch_npu_wheel"]["fallbacks"] == []
    assert summary["torch_npu_standin"]["wheel"]["torch_npu"] == wheel_tree.version
    targets = torch_npu_wheel.release_targets(wheel_tree.version)
    for graph in summary["graphs"]:
        checked = set(graph["kernels"]) if targets.ttir_check is not None else set()  # one TTIR check per kernel
        assert graph["status"] == "ok" and set(graph["torch_npu_events"]) == checked
        for name, entry in graph["files"]["kernels"].items():
            source = (out / entry["source"]).read_text()
            assert "'grid_type': 'GridNpu'" in source and "'mix_mode': 'aiv'" in source, name
            if targets.linear_fallback is not None:
                assert "'inductor_ascend_linear_mode': 'linear'" in source, name
    assert not (tmp_path / "torch_compile_debug").exists()  # torch_npu's debug trace stays off
