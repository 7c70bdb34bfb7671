"""torch_npu's own Inductor code from its released wheel on the simulated NPU
(tools/simulated/wheel/torch_npu_wheel.py)."""

# What loads torch_npu's ``_inductor`` runs in fresh interpreters: it patches torch for the rest of the process (it has
# no undo). Skipped, saying why, where the installed torch has no paired torch_npu release with a stub table, where
# its wheel cannot be downloaded, or where torch_npu's Python dependencies are missing from this environment.

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
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.tools.simulated.codegen import headers
from npu_inductor_compat.tools.simulated.wheel import pairs, wheel_release, wheel_stubs, wheel_targets
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable
from npu_inductor_compat.tools.simulated.wheel.wheel_stubs import STUBS

EXAMPLE = ROOT / "examples" / "pointwise_reduction.py"
# torch_npu's Python code imports these at load: pyyaml (its declared dependency, through torchnpugen and torchgen)
# and psutil (imported by _inductor/experimental/dynamic_filter/autotune_stats.py, not declared by the wheel)
WHEEL_PYTHON_DEPENDENCIES = ("yaml", "psutil")
HEURISTICS_IMPORT = r"^from torch_npu\._inductor(\.runtime)? import (npu_)?triton_heuristics\b"


def is_linear_kernel(source: str) -> bool:
    """Whether torch_npu generated ``source`` with its linear (index) kernel: 2.7.1.post11 and 2.9.0.post9 say so in
    inductor_meta (inductor_ascend_linear_mode); 2.13.0+ mark only the no_linear kernel (codegen/triton.py
    NPUTritonKernel.add_npu_inductor_meta: requires_no_linear_block_remap)."""
    if "'inductor_ascend_linear_mode': " in source:
        return "'inductor_ascend_linear_mode': 'linear'" in source
    return "'requires_no_linear_block_remap': True" not in source


# ------------------------------------------------------------------------------------------------ in this process
def test_the_stub_table_says_why_what_and_where_for_every_entry() -> None:
    names = [stub.name for stub in STUBS]
    assert len(names) == len(set(names)), "a symbol is stubbed twice"
    for stub in STUBS:
        assert ":" in stub.name and all(stub.name.split(":")), stub.name
        assert stub.why.strip() and stub.returns.strip() and stub.source.strip(), stub.name
        assert stub.kind in ("attribute", "schemas", "active-driver"), stub.name
    assert {stub.module for stub in STUBS} >= {"torch_npu._C", "torch_npu._C._profiler"}


@pytest.mark.download  # triton-ascend's wheel, installed into the cache on first use
@pytest.mark.once  # the stubs against one fixed wheel's source: the same on every torch line
def test_the_triton_ascend_utils_stubs_answer_as_triton_ascend_3_2_0_does(
    monkeypatch: pytest.MonkeyPatch, triton_ascend_root: Path
) -> None:
    """torch_npu's C++ wrapper asks triton-ascend's backends/ascend/utils.py (FFTS, all-blocks-parallel): each stub
    answers what 3.2.0's own function answers, run from its source where the wheel is installed in the cache."""
    import ast

    utils_module = wheel_stubs.TRITON_ASCEND_UTILS
    stubs = {stub.attribute: stub.value(None) for stub in STUBS if stub.module == utils_module}  # type: ignore[arg-type]
    assert set(stubs) == {
        "_is_auto_map_parallel_blocks_enabled",
        "force_disable_ffts",
        "get_ascend_arch_from_env",
        "is_ffts_supported",
    }
    utils = triton_ascend_root / "triton/backends/ascend/utils.py"
    tree = ast.parse(utils.read_text())
    real: dict[str, Any] = {}
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in stubs]
    exec(compile(ast.Module(body=functions, type_ignores=[]), str(utils), "exec"), {"os": os}, real)
    assert set(real) == set(stubs)
    for arch in ("", "Ascend910B3", "Ascend310B4", "Ascend910A"):
        assert stubs["is_ffts_supported"](arch) == real["is_ffts_supported"](arch), arch
    for value in (None, "", "1", "true", "TRUE", "0", "false", "yes"):
        for variable, name in (
            ("TRITON_ALL_BLOCKS_PARALLEL", "_is_auto_map_parallel_blocks_enabled"),
            ("TRITON_DISABLE_FFTS", "force_disable_ffts"),
        ):
            if value is None:
                monkeypatch.delenv(variable, raising=False)
            else:
                monkeypatch.setenv(variable, value)
            assert stubs[name]() == real[name](), (variable, value)
    for arch in (None, "Ascend910B3", "Ascend910_9599", "Ascend950"):
        if arch is None:
            monkeypatch.delenv("TRITON_ASCEND_ARCH", raising=False)
        else:
            monkeypatch.setenv("TRITON_ASCEND_ARCH", arch)
        try:
            expected: Any = real["get_ascend_arch_from_env"]()
        except ValueError as err:
            expected = str(err)
        try:
            got: Any = stubs["get_ascend_arch_from_env"]()
        except ValueError as err:
            got = str(err)
        assert got == expected, arch


def test_simulated_kernels_carry_what_triton_ascends_compiler_records() -> None:
    """torch_npu's autotuner saves a kernel's launch params from its compiled kernel: the simulated one has the
    fields triton-ascend 3.2.0's compiler records (NPUOptions, _parse_linalg_metadata), --kernel-metadata over them."""
    from npu_inductor_compat.tools.simulated.codegen import kernel_params

    source = "@triton.jit\ndef triton_poi_0(in_ptr0, xnumel, XBLOCK: tl.constexpr):\n    tmp0 = tl.load(in_ptr0)\n"
    found = kernel_params.triton_ascend_metadata("triton_poi_0", 4, source, {})
    assert found == {
        "kernel_name": "triton_poi_0",
        "mix_mode": "aiv",
        "name": "triton_poi_0 aiv",  # its driver's load_binary splits it: fnname, mix_mode = name.split()
        "parallel_mode": "simd",
        "force_simt_only": False,
        "compile_on_910_95": False,  # NPUOptions: the module's is_compile_on_910_95, never set in 3.2.0
        "shared": 1,
        "num_warps": 4,
        "required_ub_bits": 0,
        "compile_mode": "simd",
    }
    assert set(found) - {"name", "shared", "required_ub_bits"} <= set(kernel_params.TRITON_ASCEND_FIELDS) | {
        "kernel_name"
    }
    given = kernel_params.triton_ascend_metadata("k", 4, source, {"mix_mode": "aic", "workspace_size": 64})
    assert (given["name"], given["mix_mode"], given["workspace_size"]) == ("k aic", "aic", 64)
    assert "workspace_size" not in found and "lock_num" not in found  # recorded only from the kernel's callbacks
    # the triton-adapter marks a kernel with a dot "mix" (TritonToLinalgPass.cpp existDot)
    dot = source + "    tmp1 = tl.dot(tmp0, tmp0)\n"
    assert kernel_params.triton_ascend_metadata("k", 4, dot, {})["name"] == "k mix"


def test_only_pure_python_members_of_the_wheel_are_unpacked() -> None:
    keep = wheel_release._keep
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
    assert wheel_release._native_module("torch_npu/_C.cpython-311-x86_64-linux-gnu.so") == "torch_npu._C"
    assert wheel_release._native_module("torch_npu/lib/libtorch_npu.so") is None


def test_a_torch_line_without_a_stubbed_release_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WheelUnavailable, match=r"^torch 2\.15\.0: no torch_npu release is paired with torch 2\.15\.0"):
        wheel_release.paired_release("2.15.0")
    # a release of the pairs table without stubs (every one has them now: one is taken out)
    monkeypatch.setattr(wheel_release, "STUBBED", tuple(r for r in wheel_release.STUBBED if r != "2.8.0.post5"))
    monkeypatch.delitem(wheel_release.PAIRED, "2.8.0")
    with pytest.raises(WheelUnavailable, match=r"^torch_npu 2\.8\.0\.post5 \(for torch 2\.8\.0\) is not stubbed yet"):
        wheel_release.paired_release("2.8.0")
    # a line whose paired release exists but is not stubbed yet says why
    monkeypatch.setitem(wheel_release.NOT_YET, "2.13.0", "its native stubs are not written yet")
    with pytest.raises(WheelUnavailable, match=r"^torch_npu 2\.13\.0: its native stubs are not written yet \("):
        wheel_release.paired_release("2.13.0")


def test_each_stubbed_release_runs_only_on_the_exact_torch_its_metadata_requires() -> None:
    """2.9.0.post9 requires torch 2.9.0, 2.9.1 torch 2.9.1 and 2.12.0.post3 torch 2.12.0: another patch release of
    the same minor (the core line 2.12.1) is refused in one line naming the torch to install."""
    assert wheel_release.paired_release("2.7.1") == "2.7.1.post11"
    assert wheel_release.paired_release("2.9.0") == "2.9.0.post9"
    assert wheel_release.paired_release("2.12.0") == "2.12.0.post3"
    assert wheel_release.paired_release("2.12.0+cpu") == "2.12.0.post3"  # a local label is the same release
    with pytest.raises(WheelUnavailable) as refused:
        wheel_release.paired_release("2.12.1")
    assert str(refused.value) == (
        "torch_npu 2.12.0.post3 requires torch 2.12.0 (its metadata: torch ==2.12.0); this is torch 2.12.1: install "
        "torch==2.12.0 to run it"
    )
    assert wheel_release.paired_release("2.9.1") == "2.9.1"  # the minor with two releases, one per patch release
    with pytest.raises(WheelUnavailable) as refused:
        wheel_release.paired_release("2.9.2")
    assert str(refused.value) == (
        "torch_npu 2.9.0.post9 requires torch 2.9.0 (its metadata: torch ==2.9.0+cpu); this is torch 2.9.2: install "
        "torch==2.9.0 to run it; torch_npu 2.9.1 requires torch 2.9.1 (its metadata: torch ==2.9.1+cpu); this is "
        "torch 2.9.2: install torch==2.9.1 to run it"
    )
    assert "\n" not in str(refused.value)


def _defines(tree: wheel_release.WheelTree, target: str) -> bool:
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


@pytest.mark.download  # every paired release's wheel, fetched once into the cache
@pytest.mark.once  # read from the wheels, whatever torch is installed
def test_each_paired_release_names_its_record_targets_as_its_wheel_has_them() -> None:
    """RELEASES, the per-release targets of the provider's records, against each paired wheel's own source: a named
    target is defined there; where none is named, the release has no such code at all."""
    assert set(wheel_release.PAIRED.values()) <= set(wheel_targets.RELEASES)
    for release in wheel_release.PAIRED.values():
        try:
            tree = wheel_release.unpacked(release)
        except WheelUnavailable as err:  # no network: a listed reason, refused under CI
            pytest.skip(f"the torch_npu {release} wheel cannot be had: {err}")
        sources = "\n".join(path.read_text() for path in (tree.package / "_inductor").rglob("*.py"))
        targets = wheel_targets.release_targets(release)
        for target, absent in (
            (targets.ttir_check, "def make_ttir_for_check("),
            (targets.linear_fallback, "no_linear"),
            (targets.backend_hash, "def patch_triton_hash("),
        ):
            if target is None:
                assert absent not in sources, (release, absent)
            else:
                assert _defines(tree, target), (release, target)
        # every kernel imports `extension` from the module named, which binds it only from tl.extra.cann
        kernel_imports = re.findall(r"from (\S+) import libdevice, extension\b", sources)
        if targets.helpers_extension is None:
            assert kernel_imports == [], (release, kernel_imports)
        else:
            assert set(kernel_imports) == {targets.helpers_extension.partition(":")[0]}, (release, kernel_imports)
            helpers = tree.root.joinpath(*kernel_imports[0].split(".")).with_suffix(".py").read_text()
            assert "extension = tl.extra.cann.extension" in helpers, release
        dynamo = (tree.package / "utils" / "_dynamo.py").read_text()
        patches = re.search(r"def add_dynamo_methods\(\):\n((?:    .*\n|\n)*)", dynamo)
        assert targets.has_triton_at_import == bool(patches and "patch_has_triton()" in patches.group(1)), release


# ------------------------------------------------------------------------------------------------ in a child
@pytest.fixture(scope="module")
def wheel_tree() -> wheel_release.WheelTree:
    import torch

    try:
        release = wheel_release.paired_release(torch.__version__)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    missing = [name for name in WHEEL_PYTHON_DEPENDENCIES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"torch_npu {release}'s Python code imports {', '.join(missing)}, not installed here")
    try:
        return wheel_release.unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"the torch_npu {release} wheel cannot be had: {err}")


CHILD = """
    import importlib.metadata, json, runpy, sys
    import torch
    from npu_inductor_compat.activation import activate, deactivate
    from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel, wheel_stubs
    from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker
    from npu_inductor_compat.tools.simulated.codegen.capture import capturing

    example, remove, disable = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    wheel_stubs.STUBS = tuple(stub for stub in wheel_stubs.STUBS if stub.name not in remove)
    from torch._dynamo import device_interface
    meta_path, modules = list(sys.meta_path), set(sys.modules)
    def npu_interfaces():
        return {key: value for key, value in device_interface.device_interfaces.items() if key.split(":")[0] == "npu"}
    interfaces = npu_interfaces()
    result = {}
    try:
        with torch_npu_wheel.wheel_run(checker=TtirCheckWorker) as (use, provider, events):
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
    import triton.backends
    import triton.language.extra
    result["restored"] = {
        "meta_path": sys.meta_path == meta_path,
        "modules_left": sorted(
            name for name in set(sys.modules) - modules if name.partition(".")[0] in ("torch_npu", "torchnpugen")
            or name.startswith(("triton.language.extra.ascend", "triton.backends.ascend"))
        ),
        "triton_extra_ascend": hasattr(triton.language.extra, "ascend") or hasattr(triton.backends, "ascend"),
        "torch_version_cann": hasattr(torch.version, "cann"),
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
    print("RESULT " + json.dumps(result), flush=True)
    # an example's npu backward on torch 2.12+ may abort finalisation (see test_activation.py): not this test's concern
    import os
    os._exit(0)
"""


def run_child(
    cwd: Path, remove: tuple[str, ...] = (), disable: tuple[str, ...] = (), example: Path = EXAMPLE
) -> dict[str, Any]:
    env = child_env()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(example), json.dumps(remove), json.dumps(disable)],
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
        "torch_version_cann": False,
        "npu_ops": False,
        "inductor_config": [True, False],
        "torch_npu_on_npu_module": [],
        "device_interfaces": True,
    }
    assert result["distribution"] is False


@pytest.mark.subprocess
@pytest.mark.download
def test_the_kernels_are_torch_npus_and_nothing_fell_back(wheel_tree: wheel_release.WheelTree, tmp_path: Path) -> None:
    result = run_child(tmp_path)
    assert "error" not in result, result["error"]
    targets = wheel_targets.release_targets(wheel_tree.version)
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
            assert is_linear_kernel(source), name
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


# What transformers' npu_flash_attention.py does on an Ascend host: torch_npu.npu_fusion_attention on tensors that
# require grad, then backward. The result is checked against torch's own attention on the CPU.
EAGER_ATTENTION = """
import torch
import torch_npu

q, k, v = (torch.randn(1, 2, 4, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
leaves = [t.to("npu").requires_grad_() for t in (q, k, v)]
out = torch_npu.npu_fusion_attention(*leaves, 2, "BNSD", scale=0.25)[0]
out.sum().backward()
cpu = [t.clone().requires_grad_() for t in (q, k, v)]
expected = torch.nn.functional.scaled_dot_product_attention(*cpu, scale=0.25)
expected.sum().backward()
torch.testing.assert_close(out.cpu(), expected)
for leaf, reference in zip(leaves, cpu):
    torch.testing.assert_close(leaf.grad.cpu(), reference.grad)
"""


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_own_fused_attention_schema_runs_eagerly_with_its_backward(
    wheel_tree: wheel_release.WheelTree, tmp_path: Path
) -> None:
    """torch_npu's schema (its wheel's yaml) with the reference kernel and autograd, as its native op-plugin
    registrations give on a host: without them an eager call finds no kernel for Autogradnpu (torch 2.7.1)."""
    script = tmp_path / "script" / "attention.py"
    script.parent.mkdir()
    script.write_text(EAGER_ATTENTION)
    (tmp_path / "cwd").mkdir()
    result = run_child(tmp_path / "cwd", example=script)
    assert "error" not in result, result["error"]
    assert result["standin"]["wheel"]["schema_failures"] == []
    assert_restored(result)


@pytest.mark.subprocess
@pytest.mark.download
def test_a_fallback_torch_npu_takes_is_reported_per_kernel(wheel_tree: wheel_release.WheelTree, tmp_path: Path) -> None:
    # Without the TTIR-check replacement, torch_npu's check fails here (no triton-ascend in this process) and it
    # falls back, logging at debug level only, to its no_linear kernel: the report must say so for each kernel.
    targets = wheel_targets.release_targets(wheel_tree.version)
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


@pytest.mark.subprocess
@pytest.mark.download
def test_a_stub_missing_from_the_table_fails_loudly_naming_it(
    wheel_tree: wheel_release.WheelTree, tmp_path: Path
) -> None:
    # a stub the release reaches while its backend loads: 2.7's config reads the SoC; 2.9+ register torch_npu's
    # dynamo interface (utils/_dynamo_device.py imports the raw-stream getter)
    reached = {
        "2.7.1.post11": "_npu_get_soc_version",
        "2.9.0.post9": "_npu_getCurrentRawStream",
        "2.8.0.post5": "_npu_getCurrentRawStream",
        "2.9.1": "_npu_getCurrentRawStream",
        "2.10.0.post7": "_npu_getCurrentRawStream",
        "2.11.0.post3": "_npu_getCurrentRawStream",
        "2.12.0.post3": "_npu_getCurrentRawStream",
        "2.13.0": "_npu_getCurrentRawStream",
        "2.14.0": "_npu_getCurrentRawStream",
    }
    assert wheel_tree.version in reached, f"name a stub torch_npu {wheel_tree.version} reaches while loading"
    removed = f"torch_npu._C:{reached[wheel_tree.version]}"
    result = run_child(tmp_path, remove=(removed,))
    assert "error" in result
    assert "MissingStub" in result["error"] and f"reached {removed}," in result["error"], result["error"]
    assert_restored(result)


@pytest.mark.subprocess
@pytest.mark.download
def test_the_codegen_command_with_this_provider_writes_torch_npus_kernels_and_reports_per_kernel(
    wheel_tree: wheel_release.WheelTree, tmp_path: Path
) -> None:
    """`codegen` with no --provider on the torch a torch_npu release requires: torch_npu's released codegen is the
    default there; the real pipeline, through the CLI."""
    out = tmp_path / "out"
    done = run_codegen(EXAMPLE, out=out, provider=None, cwd=tmp_path)  # the default provider
    assert done.returncode == 0, done.stderr[-3000:]
    summary = done.summary
    assert summary["provider"] == "torch_npu-wheel" and summary["torch_npu_wheel"]["fallbacks"] == []
    assert summary["provider_choice"] == {
        "name": "torch_npu-wheel",
        "torch_npu": wheel_tree.version,
        "chosen_by": "default",
        "why": f"the default on torch {wheel_tree.torch}, the torch its wheel requires",
    }
    assert "stock Inductor generates the kernels" not in done.stderr
    # torch_npu's cpp_builder imports torch's cpp_extension, whose CUDA note is noise on a simulated NPU
    assert "No CUDA runtime is found" not in done.stderr, done.stderr[-3000:]
    assert summary["torch_npu_standin"]["wheel"]["torch_npu"] == wheel_tree.version
    targets = wheel_targets.release_targets(wheel_tree.version)
    for graph in summary["graphs"]:
        checked = set(graph["kernels"]) if targets.ttir_check is not None else set()  # one TTIR check per kernel
        assert graph["status"] == "ok" and set(graph["torch_npu_events"]) == checked
        for name, entry in graph["files"]["kernels"].items():
            source = (out / entry["source"]).read_text()
            assert "'grid_type': 'GridNpu'" in source and "'mix_mode': 'aiv'" in source, name
            if targets.linear_fallback is not None:
                assert is_linear_kernel(source), name
    assert not (tmp_path / "torch_compile_debug").exists()  # torch_npu's debug trace stays off


# ------------------------------------------------------------------------------------------------ both C++ wrappers
# Launch metadata for every kernel (simulated triton-ascend compiler metadata, --kernel-metadata): a workspace, int64
# lock slots (triton-ascend < 3.6), a mix mode other than the one torch_npu's codegen asks for, and a SIMT parallel
# mode, so each launch point of docs/npu-launch.md ("How our launch differs from torch_npu's") shows in the C++.
CPP_METADATA = "workspace_size=64,lock_num=4,lock_init_val=1,mix_mode=aic,parallel_mode=simt"
OUR_CPP_WRAPPERS = (
    "CppWrapperNpu",
    "CppWrapperNpuSplitIncludes",
)  # in npu_inductor_compat.common.device.npu_cpp_wrapper
# torch_npu's own C++ wrapper alone: without this package's C++ wrapper and without the record that copies the
# compiler's launch fields into the saved params (torch_npu's autotuner saves what it saves)
TORCH_NPUS_OWN = ("--without-fix", "cpp-wrapper-workspace-locks", "autotuner-kernel-metadata")


def codegen_cli(cwd: Path, *args: str) -> tuple[Any, dict[str, Any], Path]:
    out = cwd / "out"
    done = run_codegen(EXAMPLE, *args, out=out, provider="torch_npu-wheel", cwd=cwd)
    assert done.summary is not None, done.stderr[-3000:]
    return done, done.summary, out


def call_wrapper(cpp: str) -> str:
    """The generated function that loads and launches the graph's kernel (``call_<kernel>``), as text."""
    # `static inline void` (torch_npu's, and upstream's up to 2.11), `static __attribute__((noinline)) void` (2.12)
    found = re.search(r"static (?:inline|__attribute__\(\(noinline\)\)) void call_triton_\w+\(.*?\n}\n", cpp, re.S)
    assert found, "no call_triton_... function in the generated C++"
    return found.group(0)


@pytest.mark.subprocess
@pytest.mark.download
def test_the_cpp_wrapper_is_ours_and_launches_torch_npus_kernels(
    wheel_tree: wheel_release.WheelTree, tmp_path: Path
) -> None:
    """With cpp-wrapper-workspace-locks (the default) the C++ wrapper is this package's, launching the kernels
    torch_npu's codegen generates: their grid (GridNpu, torch_npu's heuristics), their runtime-block arguments, the
    function name triton-ascend's compiler records ("<kernel> <mix_mode>", looked up as "<kernel>")."""
    # the C++ is checked against the headers of the minor's torch_npu, where one ships the ACL launch API (not 2.8)
    checked = pairs.minor(wheel_tree.torch) not in headers.UNPAIRED
    check = ("--check-headers",) if checked else ()
    done, summary, out = codegen_cli(tmp_path, "--cpp-wrapper", *check, "--kernel-metadata", CPP_METADATA)
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary["torch_npu_wheel"]["fallbacks"] == []
    assert summary["torch_npu_standin"]["wheel"]["missing_stubs"] == []
    graphs = summary["graphs"]
    header_check = "ok" if checked else None
    assert [(graph["status"], graph.get("header_check")) for graph in graphs] == [("ok", header_check)] * 2
    for graph in graphs:  # the line's class: one device include, or the JIT and AOT includes apart (2.13+)
        module, _, name = graph["wrapper_class"].partition(":")
        assert module == "npu_inductor_compat.common.device.npu_cpp_wrapper" and name in OUR_CPP_WRAPPERS
    kernel = graphs[0]["kernels"][0]
    launch = call_wrapper((out / graphs[0]["files"]["wrapper"]).read_text())
    assert 'npu_inductor_compat_rt::load_kernel("' in launch and f'", "{kernel}", "aic", cubin_dir_)' in launch
    assert "npu_inductor_compat_rt::Scratch npu_scratch_(" in launch and "allocate_workspace" not in launch
    if wheel_targets.release_targets(wheel_tree.version).helpers_extension is not None:  # 2.7.1, 2.9, 2.13+
        # the runtime block of torch_npu's first candidate: 1 (2.7.1.post11, 2.9.0.post9), 4 (2.13.0, 2.14.0)
        assert re.search(r"const int64_t X0BLOCK = [1-9]\d*;", launch) and "static_cast<int32_t>(X0BLOCK)" in launch


# What torch_npu's own C++ wrapper generates for the forward kernel of examples/pointwise_reduction.py with
# CPP_METADATA on the simulated Ascend910B3, read from the generated C++ of each paired release: how often each
# text occurs in the kernel's call function. docs/npu-launch.md's comparison ("what torch_npu generates") quotes these.
TORCH_NPU_LAUNCH: dict[str, dict[str, Any]] = {
    "2.7.1.post11": {
        "class": "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
        "counts": {
            "allocate_workspace(": 2,  # the workspace, then the locks: two requests of one per-stream block
            "void* workspace_addr = NULL;": 1,
            "void* sync_block_lock = NULL;": 1,
            "workspace_addr = const_cast<void *>(workspace_tensor.storage().data());": 1,
            "sync_block_lock_tensor.storage().data());": 1,
            "aclrtMemcpy(": 1,  # the locks initialised by a blocking host-to-device copy, not on the stream
            "ACL_MEMCPY_HOST_TO_DEVICE": 1,
            "static_cast<int64_t>(1));": 1,  # lock_init_val
            "aclrtGetHardwareSyncAddr(&ffts_addr)": 1,
            "aclrtLaunchKernelWithHostArgs(": 1,
            "stream_, nullptr, args, args_size": 1,  # no launch config: no SIMT attribute off Ascend950
            "aclrtLaunchKernelAttr": 0,
            ' aic", "aic", 1, cubin_dir_)': 1,  # loadKernel(path, "<kernel> aic", mix_mode, shared, dir)
            "int64_t X0BLOCK = 1;": 1,
            "int32_t var_6 = X0BLOCK;": 1,
            "launchKernel(launch_call, ": 1,  # through OpCommand::RunOpApiV2 (torch_npu's task queue)
        },
        "module_error": None,
    },
    "2.9.0.post9": {
        "class": "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
        "counts": {
            "allocate_workspace(": 0,  # the metadata's workspace and locks are ignored: NULL is passed
            "void* workspace_addr = NULL;": 1,
            "void* sync_block_lock = NULL;": 1,
            "aclrtMemcpy(": 0,
            "aclrtGetHardwareSyncAddr(&ffts_addr)": 1,
            "aclrtLaunchKernelWithHostArgs(": 1,
            "stream_, nullptr, args, args_size": 1,
            "aclrtLaunchKernelAttr": 0,
            ' aic", "aic", 1, cubin_dir_)': 1,
            "int64_t X0BLOCK = 1;": 1,
            "int32_t var_6 = X0BLOCK;": 1,
            "int32_t device_idx_,": 1,
            "launchKernel(launch_call, ": 1,
        },
        "module_error": None,
    },
    "2.12.0.post3": {
        "class": "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
        "counts": {
            "allocate_workspace(": 0,
            "void* workspace_addr = NULL;": 1,
            "void* sync_block_lock = NULL;": 1,
            "aclrtMemcpy(": 0,
            "rtGetC2cCtrlAddr((uint64_t*)&ffts_addr, &ffts_len);": 1,  # FFTS always, through the runtime API
            "aclrtGetHardwareSyncAddr": 0,
            "rtKernelLaunch(": 1,  # rtKernelLaunch, no ACL launch and no launch attributes at all
            "aclrtLaunchKernelWithHostArgs": 0,
            "aclrtLaunchKernelAttr": 0,
            ' aic", "aic", 1, cubin_dir_)': 1,
            "X0BLOCK": 0,
            "int var_4 = x0_numel;": 1,  # integer arguments as int, whatever their signature
            "launchKernel(launch_call_0, ": 1,
        },
        # its header opens the C++ with ''' (copied from torch < 2.12, without r), torch 2.12's closes it with """
        "module_error": "unterminated triple-quoted string literal",
    },
    # no C++ at all: with autotune at compile time (torch's default for cpp_wrapper where Triton is present)
    # its generate_kernel_call_npu calls PythonWrapperCodegen.generate_kernel_call with torch 2.6's positional
    # arguments, which torch 2.8 and 2.9 take as keywords (docs/torch-npu-reports.md)
    "2.9.1": {  # and 2.8.0.post5
        "class": "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
        "codegen_error": "TypeError: PythonWrapperCodegen.generate_kernel_call() takes 3 positional arguments but 13 "
        "were given",
    },
    # 2.7.1.post11's launch again (workspace, locks by a blocking copy, the ACL launch), with the runtime block its
    # own candidate plan picks first (X0BLOCK 4)
    "2.13.0": {
        "class": "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
        "counts": {
            "allocate_workspace(": 2,
            "void* workspace_addr = NULL;": 1,
            "void* sync_block_lock = NULL;": 1,
            "aclrtMemcpy(": 1,
            "ACL_MEMCPY_HOST_TO_DEVICE": 1,
            "static_cast<int64_t>(1));": 1,
            "aclrtGetHardwareSyncAddr(&ffts_addr)": 1,
            "aclrtLaunchKernelWithHostArgs(": 1,
            "stream_, nullptr, args, args_size": 1,
            "aclrtLaunchKernelAttr": 0,
            ' aic", "aic", 1, cubin_dir_)': 1,
            "int64_t X0BLOCK = 4;": 1,
            "int32_t var_6 = X0BLOCK;": 1,
            "int32_t device_idx_,": 1,
            "launchKernel(launch_call, ": 1,
        },
        "module_error": None,
    },
}
# read in their generated C++: the same launch as the entry named
TORCH_NPU_LAUNCH["2.14.0"] = TORCH_NPU_LAUNCH["2.10.0.post7"] = TORCH_NPU_LAUNCH["2.13.0"]
TORCH_NPU_LAUNCH["2.8.0.post5"] = TORCH_NPU_LAUNCH["2.9.1"]
# 2.12.0.post3's launch; its header's quotes match torch 2.11's, so the module loads
TORCH_NPU_LAUNCH["2.11.0.post3"] = {**TORCH_NPU_LAUNCH["2.12.0.post3"], "module_error": None}


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_own_cpp_wrapper_generates_the_launch_as_read_in_its_code(
    wheel_tree: wheel_release.WheelTree, tmp_path: Path
) -> None:
    """Without this package's C++ wrapper, torch_npu's own (CppWrapperNpu, registered by its backend) generates the
    wrapper; what it generates for each launch point is pinned per release, so a release that changes fails here."""
    assert wheel_tree.version in TORCH_NPU_LAUNCH, f"read torch_npu {wheel_tree.version}'s generated launch first"
    expected = TORCH_NPU_LAUNCH[wheel_tree.version]
    done, summary, out = codegen_cli(
        tmp_path, "--cpp-wrapper", "--check-headers", "--kernel-metadata", CPP_METADATA, *TORCH_NPUS_OWN
    )
    assert done.returncode == 1  # its C++ needs CANN's headers (and on 2.12 its module is no Python)
    assert {"autotuner-kernel-metadata", "cpp-wrapper-workspace-locks"} <= set(summary["without_fix"])
    graph = summary["graphs"][0]
    assert graph["wrapper_class"] == expected["class"]
    if "codegen_error" in expected:  # torch_npu's wrapper fails while generating: the graph fails, saying why
        assert (
            graph["status"] != "ok"
            and expected["codegen_error"] in f"{graph['error']['type']}: " + graph["error"]["message"]
        ), graph["error"]
        return
    launch = call_wrapper((out / graph["files"]["wrapper"]).read_text())
    assert {text: launch.count(text) for text in expected["counts"]} == expected["counts"]
    if expected["module_error"] is None:
        assert graph["status"] == "ok" and graph["error"] is None
    else:  # loading the module fails as it would on an NPU host: the graph fails, the C++ is still kept
        assert graph["error"]["type"] == "SyntaxError" and expected["module_error"] in graph["error"]["message"]
        assert summary["script_error"] is not None
    # against the paired wheel's headers alone, torch_npu's C++ stops at a CANN toolkit header the wheel lacks
    if not os.environ.get("ASCEND_HOME_PATH"):
        assert graph["header_check"].startswith(f"against torch_npu {wheel_tree.version} wheel:\nmissing header ")
        assert "fatal error: runtime/runtime/rt.h: No such file or directory" in graph["header_check"]
