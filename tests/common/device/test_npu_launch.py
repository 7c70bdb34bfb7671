"""The NPU kernel launch code (fixes cpp-wrapper-workspace-locks and autotuner-kernel-metadata) on this torch."""

# There is no NPU here, so this tests one level below it. One fresh interpreter runs real Inductor codegen with
# cpp_wrapper=True on the simulated NPU for ``sin(x) + 1`` once per metadata scenario (the simulated compiler metadata
# goes through upstream's save_gpu_kernel and the autotuner fix, like real metadata), and each launch block is compared
# with a golden file shared by every torch line (tests/golden/npu_launch/). The whole wrapper is built, linked and run
# by tests/common/device/test_npu_wrapper_run.py. NPU_INDUCTOR_COMPAT_UPDATE_GOLDENS=1 rewrites a golden that differs
# and fails that test naming it (review the diff, run again without it); .ci/run refuses to run with it set. What this
# proves: the launch block as generated equals the reviewed one; not that the reviewed one is right (the run test shows
# that).

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_paths import TESTS

pytestmark = [pytest.mark.subprocess, pytest.mark.build]

GOLDEN = TESTS / "golden" / "npu_launch"
UPDATE_GOLDENS = "NPU_INDUCTOR_COMPAT_UPDATE_GOLDENS"
KERNEL = "triton_poi_fused_add_sin_0"
XNUMEL = 264  # 2 blocks of 256 elements: per-block sizes are visibly multiplied
LAUNCHES = 100

SCENARIOS: dict[str, dict[str, Any]] = {
    "neither": {},
    "workspace_only": {"workspace_size": 64},
    "locks_lock_num": {"lock_num": 3, "lock_init_val": 0},
    "locks_lock_num_init_5": {"lock_num": 3, "lock_init_value": 5},  # triton-ascend 3.2.0's driver spelling
    "locks_packed_mix": {
        "sync_block_lock_layout": (1 << 32) | 2,
        "mix_mode": "mix",
        "auto_tile_and_bind_subblock": True,
        "lock_init_val": 7,
    },
    "both": {"workspace_size": 128, "sync_block_lock_layout": 3},
    "force_simt_only": {
        "workspace_size": 64,
        "lock_num": 2,
        "force_simt_only": True,
        "shared_mem_dynamic_size": 1024,
        "compile_on_910_95": True,
    },
    "simt_with_locks": {
        "lock_num": 2,
        "parallel_mode": "simt",
        "shared_mem_dynamic_size": 221184,
        "mix_mode": "aiv",
        "compile_on_910_95": True,
    },
    # SIMT compiled for another SoC: no launch attribute (triton-ascend: compile_on_910_95 and enable_simt)
    "simt_not_910_95": {"lock_num": 1, "parallel_mode": "mix_simd_simt", "shared_mem_dynamic_size": 4096},
    "all_blocks_parallel": {"workspace_size": 32, "lock_num": 1, "mix_mode": "aiv", "ALL_BLOCKS_PARALLEL": True},
    "blockify_blacklisted": {"lock_num": 1, "has_auto_blockify_blacklist_op": True, "ALL_BLOCKS_PARALLEL": True},
    # triton-ascend's newer compiler coalesced 2 programs into one along axis 0, rounding the grid up (its launcher:
    # launcher_src/launcher_args.h, prepareGrid); the 2 blocks of 256 elements launch as 1, workspace for 1 block
    "coalesced_rounded_up": {
        "workspace_size": 64,
        "coalesce_factor": 2,
        "coalesce_axis": 0,
        "coalesce_grid_ceil_div": True,
    },
    # compiled for its native launcher: the struct ends in two null scratch slots (pure SIMT) and a null debug slot
    "native_pure_simt": {"is_pure_simt": True, "program_grid_mapping_applied": False},
}

GENERATE = """
import json, os, sys, torch
import torch._inductor.config as inductor_config
from npu_inductor_compat.activation import activate
from npu_inductor_compat.common.composition import providers
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.codegen.capture import capturing
from npu_inductor_compat.tools.simulated.codegen.headers import cpp_source
from npu_inductor_compat.tools.simulated.codegen.kernel_params import simulated_metadata

device.setup()
providers.set_provider(device.PROVIDER)
activate()
x = torch.randn(XNUMEL).to("npu")
out = {}
for name, metadata in json.loads(sys.argv[1]).items():
    torch._dynamo.reset()
    os.environ["TRITON_ALL_BLOCKS_PARALLEL"] = "1" if metadata.pop("ALL_BLOCKS_PARALLEL", False) else "0"
    with capturing() as capture, inductor_config.patch(cpp_wrapper=True), simulated_metadata(metadata):
        torch.compile(lambda t: t.sin() + 1.0)(x)
    graph = capture.graphs[0]
    out[name] = {"error": graph.error, "cpp": None if graph.error else cpp_source(graph.wrapper_source)}
print(json.dumps(out))
""".replace("XNUMEL", str(XNUMEL))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    cwd = tmp_path_factory.mktemp("generate")
    done = subprocess.run(
        [sys.executable, "-c", GENERATE, json.dumps(SCENARIOS)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    errors = {name: result["error"] for name, result in found.items() if result["error"]}
    assert not errors, errors
    return {name: result["cpp"] for name, result in found.items()}


def launch_block(cpp: str) -> str:
    """The generated grid, argument declarations and launch of KERNEL's call function."""
    body = cpp[cpp.index(f"void call_{KERNEL}(") :]
    start = body.index("const uint32_t grid_0")
    end = body.index("\n", body.index("aclrtLaunchKernelWithHostArgs"))
    start = body.rindex("\n", 0, start) + 1
    block = re.sub(r'load_kernel\("[^"]+"', 'load_kernel("<kernel binary>"', body[start:end])  # a temporary path
    return textwrap.dedent(block) + "\n"


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_launch_block_matches_the_golden_shared_by_every_torch_line(generated: dict[str, str], scenario: str) -> None:
    block = launch_block(generated[scenario])
    golden = GOLDEN / f"{scenario}.cpp"
    if os.environ.get(UPDATE_GOLDENS) == "1" and (not golden.is_file() or golden.read_text() != block):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(block)
        # never blessed blind: the run that rewrites a golden fails, naming it, until its diff is reviewed
        pytest.fail(f"{UPDATE_GOLDENS}=1 rewrote {golden}: review its diff, then run again without it")
    assert block == golden.read_text(), f"launch block for {scenario} differs from {golden}"


def test_the_header_check_fails_on_a_name_the_headers_do_not_declare(tmp_path: Path) -> None:
    """The check must be able to fail: an ACL call the paired torch_npu headers do not declare is an error."""
    from npu_inductor_compat.tools.simulated.codegen import headers

    try:
        (source,) = headers.torch_npu_headers("2.12.1")
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"torch_npu headers unavailable: {err}")
    good, bad = tmp_path / "good.cpp", tmp_path / "bad.cpp"
    good.write_text(
        "#include <acl/acl_rt.h>\nvoid* launch = reinterpret_cast<void*>(&aclrtLaunchKernelWithHostArgs);\n"
    )
    bad.write_text("#include <acl/acl_rt.h>\nvoid* launch = reinterpret_cast<void*>(&aclrtLaunchKernelNoSuchThing);\n")
    assert headers.check(good, source) == (True, "")
    ok, errors = headers.check(bad, source)
    assert not ok and "aclrtLaunchKernelNoSuchThing" in errors


def test_cpp_source_finds_the_cpp_in_both_quotings_and_refuses_a_python_wrapper() -> None:
    from npu_inductor_compat.tools.simulated.codegen.headers import cpp_source

    for quote in ("'''", '"""'):
        assert cpp_source(f"x = 1\ncpp_wrapper_src = (\nr{quote}\nint main() {{}}\n{quote}\n)\n") == "int main() {}"
    with pytest.raises(ValueError, match="not a C\\+\\+ wrapper"):
        cpp_source("def call(args):\n    pass\n")
    # torch_npu 2.12.0.post3's wrapper opens with a plain ''' and torch 2.12's closes with """: no Python module, but
    # its C++ is still read (to compare and check it)
    assert cpp_source("cpp_wrapper_src = (\n'''\nint main() {}\n\"\"\"\n)\n\nx = 1\n") == "int main() {}"


def test_the_header_check_compiles_as_torch_npus_builder_and_names_a_missing_cann_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-DUSE_NPU (torch_npu's C shim declares nothing without it), CANN's include directories when ASCEND_HOME_PATH
    names a toolkit, and a header found nowhere is named with where it would come from."""
    from npu_inductor_compat.tools.simulated.codegen import headers

    try:
        (source,) = headers.torch_npu_headers("2.12.1")
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"torch_npu headers unavailable: {err}")
    monkeypatch.delenv(headers.CANN_ENV, raising=False)
    shim = tmp_path / "shim.cpp"
    shim.write_text(
        "#include <torch_npu/csrc/inductor/aoti_runtime/utils_npu.h>\n"
        "using Guard = torch::aot_inductor::AOTINpuGuard;\n"
    )
    assert "-DUSE_NPU" in headers.compile_command(shim, source)
    assert headers.check(shim, source) == (True, "")
    rt = tmp_path / "rt.cpp"
    rt.write_text("#include <runtime/runtime/rt.h>\n")
    ok, errors = headers.check(rt, source)
    assert not ok and errors.startswith("missing header runtime/runtime/rt.h: not in torch's or torch_npu")
    assert "set ASCEND_HOME_PATH to a CANN toolkit" in errors
    cann = tmp_path / "cann"
    (cann / "pkg_inc" / "runtime" / "runtime").mkdir(parents=True)
    (cann / "pkg_inc" / "runtime" / "runtime" / "rt.h").write_text("typedef int rtError_t;\n")
    monkeypatch.setenv(headers.CANN_ENV, str(cann))
    assert f"-I{cann / 'pkg_inc'}" in headers.compile_command(rt, source)
    assert headers.check(rt, source) == (True, "")


def test_the_kernel_function_is_looked_up_without_the_mix_mode_triton_ascend_appends() -> None:
    from npu_inductor_compat.common.device.npu_cpp_wrapper import kernel_function_name

    # triton-ascend 3.2.0 names a compiled kernel "<kernel> <mix_mode>" (compiler.py _parse_linalg_metadata)
    assert kernel_function_name("triton_poi_fused_0 aiv") == "triton_poi_fused_0"
    assert kernel_function_name("triton_poi_fused_0") == "triton_poi_fused_0"


def test_the_launch_runtime_is_a_cpp_file_that_compiles_on_its_own(tmp_path: Path) -> None:
    """The runtime every NPU wrapper starts with is package data, compiled here alone against torch's headers and
    the paired torch_npu release's (its own ACL headers included)."""
    import torch

    from npu_inductor_compat.common.device import npu_launch
    from npu_inductor_compat.tools.simulated.codegen import headers

    try:
        (source,) = headers.torch_npu_headers(torch.__version__)
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"torch_npu headers unavailable: {err}")
    runtime = tmp_path / "runtime.cpp"
    runtime.write_text(npu_launch.runtime_source())
    assert headers.check(runtime, source) == (True, "")
    broken = tmp_path / "broken.cpp"
    broken.write_text(npu_launch.runtime_source().replace("aclrtGetDeviceInfo(", "aclrtGetDeviceInfoo("))
    ok, errors = headers.check(broken, source)
    assert not ok and "aclrtGetDeviceInfoo" in errors


@pytest.mark.parametrize(
    ("value", "expected"), [("", False), ("0", False), ("false", False), ("FALSE", False), ("1", True), ("True", True)]
)
def test_triton_ascend_switches_read_as_triton_ascend_means_them(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: bool
) -> None:
    from npu_inductor_compat.common.device.npu_cpp_wrapper import ALL_BLOCKS_PARALLEL_ENV, env_switch

    monkeypatch.setenv(ALL_BLOCKS_PARALLEL_ENV, value)
    assert env_switch(ALL_BLOCKS_PARALLEL_ENV) is expected


@pytest.mark.parametrize("value", ["yes", "2", "on", "fasle"])
def test_a_switch_value_triton_ascend_reads_two_ways_is_an_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from npu_inductor_compat.common.device.npu_cpp_wrapper import ALL_BLOCKS_PARALLEL_ENV, NpuLaunchError, env_switch

    monkeypatch.setenv(ALL_BLOCKS_PARALLEL_ENV, value)
    with pytest.raises(NpuLaunchError, match=f"TRITON_ALL_BLOCKS_PARALLEL='{value}': expected 1 or true"):
        env_switch(ALL_BLOCKS_PARALLEL_ENV)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, True),
        ({"TRITON_DISABLE_FFTS": "1"}, False),
        ({"TRITON_ASCEND_ARCH": "Ascend910A"}, False),
        ({"TRITON_ASCEND_ARCH": "Ascend310B4"}, False),
        ({"TRITON_ASCEND_ARCH": "Ascend910_9391"}, True),
        ({"TRITON_ASCEND_ARCH": "Ascend910B2"}, True),
        ({"TRITON_ASCEND_ARCH": "Ascend910_958b"}, False),
        ({"TRITON_ASCEND_ARCH": "Ascend950PR"}, False),
    ],
)
def test_without_triton_ascend_or_torch_npu_the_ffts_slot_follows_triton_ascends_rule(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: bool
) -> None:
    from npu_inductor_compat.common.device import npu_cpp_wrapper

    for name in ("TRITON_DISABLE_FFTS", "TRITON_ASCEND_ARCH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    answer, reason = npu_cpp_wrapper.ffts_decision()
    assert answer is expected, reason


@pytest.mark.parametrize("supported", [True, False])
def test_an_installed_triton_ascend_answers_the_ffts_question_itself(
    monkeypatch: pytest.MonkeyPatch, supported: bool
) -> None:
    """Stands in for triton-ascend's python/triton/backends/ascend/utils.py (names as in its repository: the
    environment rule says the opposite, so the answer must come from the module)."""
    import importlib.machinery
    import types

    from npu_inductor_compat.common.device import npu_cpp_wrapper

    utils = types.ModuleType("triton.backends.ascend.utils")
    utils.__spec__ = importlib.machinery.ModuleSpec("triton.backends.ascend.utils", None)
    utils.triton_support_ffts = lambda: supported  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton.backends.ascend.utils", utils)
    monkeypatch.setenv("TRITON_DISABLE_FFTS", "0" if not supported else "1")
    assert npu_cpp_wrapper.ffts_decision() == (supported, "triton-ascend's triton_support_ffts()")


@pytest.mark.parametrize("with_arch", [False, True])
def test_force_disable_ffts_is_asked_as_the_installed_triton_ascend_defines_it(
    monkeypatch: pytest.MonkeyPatch, with_arch: bool
) -> None:
    """triton-ascend 3.2.0 and its main branch define force_disable_ffts() with no argument; a newer driver defines
    force_disable_ffts(arch) (true on the 910_95 family). Stands in for its backends/ascend/utils.py, without
    triton_support_ffts (as in 3.2.0): the arch must reach the function that takes it."""
    import importlib.machinery
    import types

    from npu_inductor_compat.common.device import npu_cpp_wrapper

    utils = types.ModuleType("triton.backends.ascend.utils")
    utils.__spec__ = importlib.machinery.ModuleSpec("triton.backends.ascend.utils", None)
    utils.get_ascend_arch_from_env = lambda: "Ascend910_9589"  # type: ignore[attr-defined]
    utils.is_ffts_supported = lambda arch: True  # type: ignore[attr-defined]
    if with_arch:
        utils.force_disable_ffts = lambda arch: arch.startswith("Ascend910_95")  # type: ignore[attr-defined]
    else:
        utils.force_disable_ffts = lambda: False  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton.backends.ascend.utils", utils)
    answer, reason = npu_cpp_wrapper.ffts_decision()
    assert answer is (not with_arch), reason
    assert reason.endswith("force_disable_ffts(arch)" if with_arch else "force_disable_ffts()"), reason


def test_npu_wrappers_are_built_with_torch_npus_and_acls_libraries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from npu_inductor_compat.common.device.npu_cpp_wrapper import NpuLaunchError
    from npu_inductor_compat.common.fixes import cpp_wrapper_launch

    def upstream(device_type: str, aot_mode: bool = False, compile_only: bool = False) -> Any:
        return (["D"], ["inc"], ["c"], ["ld"], ["libdir"], ["lib"], ["pass"])

    options = cpp_wrapper_launch._building_with_npu_libraries(upstream)
    assert options(device_type="cpu") == upstream("cpu")
    monkeypatch.setenv(cpp_wrapper_launch.TORCH_NPU_HOME_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(NpuLaunchError, match="NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME=.* has no include/torch_npu/"):
        options(device_type="npu")
    home, ascend = tmp_path / "torch_npu", tmp_path / "cann"
    for path in (home / "include" / "torch_npu", home / "lib", ascend / "lib64"):
        path.mkdir(parents=True)
    monkeypatch.setenv(cpp_wrapper_launch.TORCH_NPU_HOME_ENV, str(home))
    monkeypatch.setenv(cpp_wrapper_launch.ASCEND_HOME_ENV, str(ascend))
    definitions, includes, cflags, ldflags, library_dirs, libraries, passthrough = options(device_type="npu")
    assert includes == ["inc", str(home / "include")]
    assert library_dirs == ["libdir", str(home / "lib"), str(ascend / "lib64")]
    assert libraries == ["lib", "torch_npu", "ascendcl"]
    assert ldflags == ["ld", f"Wl,-rpath,{home / 'lib'}", f"Wl,-rpath,{ascend / 'lib64'}"]
    assert (definitions, cflags, passthrough) == (["D"], ["c"], ["pass"])
