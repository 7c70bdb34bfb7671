"""The whole NPU C++ wrapper, built, linked and run (the cpp-wrapper-workspace-locks and autotuner-kernel-metadata
fixes)."""

# There is no NPU here, so this runs the real thing one level below it. Inductor generates the complete C++ wrapper of a
# four-kernel graph for the simulated NPU (``cpp_wrapper=True``, dynamic shapes), compiles it and links it with this
# package's build options for "npu" against libtorch_npu and libascendcl, loads it and calls it with real input tensors.
# The two libraries are stubs built from emulations of torch_npu's workspace allocator and of the ACL runtime
# (tests/emulated_acl: each modelled on the real component's source, cited there, and compiled against the real
# torch_npu and ACL headers of the torch_npu wheel paired with this torch line). The emulated ACL records every launch
# (kernel, device, blockDim, launch attributes, the packed argument bytes, the memory each argument points into); the
# emulated device then runs each kernel of a small call from its packed arguments in Triton's interpreter (the tool's
# device_launch, reading the struct by triton-ascend's launcher layout), and dirties the memory of a larger one.
#
# Each kernel gets the metadata of one scenario. What is checked is computed from the sources (triton-ascend's
# launcher for the argument layout, lock layout and block rules, in the tool's packed_args; torch_npu's allocator for
# the memory), not from the wrapper generator's code: every output of an executed call against eager; every tensor
# pointer, scalar, workspace and lock pointer in its slot for every launch; workspace and locks never overlap and are
# never freed before the launch that uses them, across sizes that grow and shrink; the lock contents each launch sees;
# the launch limit and all-blocks-parallel capping; the device; ACL failures; planted launch defects caught.

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

from npu_inductor_compat.tools.simulated.execution import emulated_runtime, packed_args

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

EMULATED = emulated_runtime.HERE  # emulated_acl.h, the emulated ACL's host side


SCENARIOS, CORES = harness.SCENARIOS, harness.CORES
_run_plan = harness.run_plan

# multiples of 16 that grow and shrink (no 16-row input: a dimension of 1 would specialise the graph)
SIZES = [64, 4096, 32, 65536, 128, 2048, 256, 32768, 96, 8192] * 2 + [512, 160, 1024]
FAILING = [
    "aclrtMallocHost",
    "aclrtMemsetAsync",
    "aclrtMemcpyAsync",
    "aclrtGetHardwareSyncAddr",
    "aclrtLaunchKernelWithHostArgs",
]
PLAN = {
    "execute": 1024,  # the largest input whose kernels are executed (Triton's interpreter: ~1 ms an element)
    "scenarios": SCENARIOS,
    "cores": harness.PLAN_CORES,
    "phases": [
        {"device": 0, "sizes": [48], "fail": ["aclrtBinaryLoadFromData", "aclrtBinaryGetFunction", None]},
        {"device": 0, "sizes": SIZES},
        {"device": 0, "sizes": ["over_limit"]},
        {"device": 1, "sizes": [65536, 4096], "env": {"TRITON_ALL_BLOCKS_PARALLEL": "1"}},
    ],
}
# ACL failures inside the launch, each on its own call: with the task queue off, so each surfaces at its call (with
# the queue on, the first failure puts torch_npu's queue in its error state for good: see the ordering tests)
INLINE_PLAN = {
    "scenarios": SCENARIOS,
    "cores": PLAN["cores"],
    "phases": [{"device": 0, "sizes": [80], "fail": FAILING}],  # a new size: a new lock image (aclrtMallocHost)
}
# Each kernel's launch generated with one defect (executed_run.PLANTS, by compile order): the lock buffer left
# uninitialised, the last argument missing from the struct, the first two pointers swapped, the grid misaligned; its
# locks in fresh device memory, as they would be after any other launch's use
PLANTED_PLAN = {**INLINE_PLAN, "execute": 1024, "phases": [{"device": 0, "sizes": [512], "plant": True}]}
MAGIC = {"aiv": 0x41415246, "other": 0x43554245}  # ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE / _AICORE (acl_rt.h)


@pytest.fixture(scope="module")
def run(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_plan(emulated_npu, PLAN, tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def inline_run(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_plan(emulated_npu, INLINE_PLAN, tmp_path_factory.mktemp("inline"), {"TASK_QUEUE_ENABLE": "0"})


@pytest.fixture(scope="module")
def planted_run(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_plan(emulated_npu, PLANTED_PLAN, tmp_path_factory.mktemp("planted"), {"TASK_QUEUE_ENABLE": "0"})


# ---------------------------------------------------------------------------------------------- expectations
def _pure_simt(meta: dict[str, Any]) -> bool:
    return packed_args.pure_simt(meta)


def decode(args: bytes, meta: dict[str, Any], arguments: list[list[str]]) -> dict[str, Any]:
    """The packed argument struct's fields as the emulated device reads them (packed_args: triton-ascend's launcher
    layout, cited there), with each field's offset under its name + "@". The kernels' execution from these same
    fields (test_every_call_computes_what_eager_computes) is what shows the layout right."""
    layout = packed_args.layout([(name, kind) for name, kind in arguments], meta, ffts=True)
    fields = layout.decode(args)
    return {**fields, **{field.name + "@": field.offset for field in layout.fields}}


def lock_image(meta: dict[str, Any], block_dim: int) -> list[int]:
    return packed_args.lock_image(meta, block_dim)


def _launches(run: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(call, launch) for every launch of a successful call."""
    launches = run["report"]["launches"]
    return [(call, launches[index]) for call in run["calls"] for index in range(*call["launches"])]


def _scenario(run: dict[str, Any], kernel: str) -> tuple[dict[str, Any], list[list[str]]]:
    found = run["kernels"][kernel]
    return SCENARIOS[found["scenario"]], found["args"]


# ---------------------------------------------------------------------------------------------- tests
def test_the_graph_ran_every_kernel_for_every_size(run: dict[str, Any]) -> None:
    assert len(run["kernels"]) == 4, run["kernels"]
    assert sorted(kernel["scenario"] for kernel in run["kernels"].values()) == [0, 1, 2, 3]
    sizes = [call["n"] for call in run["calls"] if call["device"] == 0]
    assert sizes == [48, *SIZES]  # the calls at size 80 all failed on purpose
    assert all(call["launches"][1] - call["launches"][0] == 4 for call in run["calls"])
    assert len(_launches(run)) >= 100
    assert run["report"]["hazards"] == []
    assert run["report"]["calls"].get("aclrtMemcpy", 0) == 0  # never a blocking copy


def test_the_wrapper_loads_and_launches_where_acl_has_no_capture_query(emulated_npu: Any, run: dict[str, Any]) -> None:
    """Shown able to fail (the wrapper this package generated before linked aclmdlRICaptureGetInfo and did not load
    here): asked through torch_npu, which looks the function up at run time, every call ran."""
    import ctypes

    assert not hasattr(ctypes.CDLL(str(emulated_npu.libascendcl)), "aclmdlRICaptureGetInfo")
    assert len(run["calls"]) == 1 + len(SIZES) + 2 and "aclmdlRICaptureGetInfo" not in run["report"]["calls"]


def test_every_call_computes_what_eager_computes(run: dict[str, Any]) -> None:
    """Each kernel ran on the emulated device from its packed argument struct (its pointers, scalars and grid read by
    its signature, its workspace and locks checked), in Triton's interpreter, on the memory the struct points at: every
    output of every call equals eager's, on both devices, in all-blocks-parallel mode too."""
    executed = [call for call in run["calls"] if "matches" in call]
    assert sorted(call["n"] for call in executed) == sorted(n for n in [48, *SIZES] if n <= PLAN["execute"])
    for call in executed:
        assert call["matches"] == [True] * 4, (call["n"], call["device"], call["matches"], call["hazards"])
        assert call["hazards"] == []


@pytest.mark.once  # the defects are planted in this package's launch text, the same on every torch line
def test_each_planted_launch_defect_is_caught_by_the_executing_device(planted_run: dict[str, Any]) -> None:
    """Shown able to fail: with one defect planted in each kernel's generated launch, every output is wrong, and the
    device names the kernel and what it found: a lock buffer never initialised, a struct one argument short, a struct
    whose grid moved; the two swapped pointers in the values (the kernel wrote its input). The coalesced kernel,
    also launched as if its factor were absent, takes more blocks than the coalescing rule gives it."""
    (planted,) = planted_run["calls"]
    assert planted["matches"] == [False] * 4, planted
    name_of = {kernel["scenario"]: name for name, kernel in planted_run["kernels"].items()}
    found = {
        index: [text for text in planted["hazards"] if f"kernel {name} failed" in text]
        for index, name in name_of.items()
    }
    assert len(found[0]) == 1 and "lock buffer is not initialised" in found[0][0], found
    assert len(found[1]) == 1 and "the argument struct is" in found[1][0], found
    # the kernel reads the output as its input: past its end where the input is the larger (the bounds check of
    # codegen --execute, execute_bounds), else only the values tell
    assert all("on the device that reaches another tensor's memory" in text for text in found[2]), found
    assert len(found[3]) == 1 and "the argument struct is" in found[3][0], found
    # the coalesced kernel's factor ignored: launched on every program of its grid, twice the blocks it should take
    launched = [(planted, launch) for launch in planted["planted_launches"]]
    ((_, blocks, want),) = _coalesced_blocks(planted_run, launched)
    assert blocks > want, (blocks, want)


def test_tensor_pointers_and_scalars_are_in_their_slots(run: dict[str, Any]) -> None:
    for call, launch in _launches(run):
        meta, arguments = _scenario(run, launch["kernel"])
        fields = decode(bytes.fromhex(launch["args"]), meta, arguments)
        n = call["n"]
        assert fields["in_ptr0"] == call["x"], launch["kernel"]
        assert fields["out_ptr0"] in call["outputs"], launch["kernel"]
        for name, signature in arguments:
            if not signature.startswith("*"):
                assert fields[name] in {n, n // 2, n // 8, n // 16, 8, 16}, (launch["kernel"], name, fields[name], n)
        assert fields["ffts_addr"] != 0


def _coalesced_blocks(run: dict[str, Any], launches: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Any]:
    """(n, blocks launched, ceil(ceil(rows / XBLOCK) / 2)) for each device-0 launch of the last scenario's kernel
    (rows of 16, coalesced by 2 along axis 0, rounded up)."""
    (name,) = [name for name, kernel in run["kernels"].items() if kernel["scenario"] == 3]
    xblock = run["kernels"][name]["config"]["XBLOCK"]
    return [
        (call["n"], launch["blocks"], math.ceil(math.ceil(call["n"] // 16 / xblock) / 2))
        for call, launch in launches
        if launch["kernel"] == name and call["device"] == 0
    ]


def test_a_coalesced_kernel_is_launched_on_its_grid_divided_by_the_factor(run: dict[str, Any]) -> None:
    """The coalesced kernel is launched on ceil(ceil(rows / XBLOCK) / 2) blocks, as triton-ascend's launcher launches
    it (launcher_args.h, prepareGrid); its executed calls matching eager shows each launched program did the work of
    two. The planted run's launch, generated as if the factor were absent, fails the same rule (below)."""
    found = _coalesced_blocks(run, _launches(run))
    assert len(found) == len(SIZES) + 1 and all(blocks == want for _, blocks, want in found), found


def test_workspace_and_locks_never_alias_and_are_never_freed_before_their_launch(run: dict[str, Any]) -> None:
    """One request to the workspace allocator per launch, carved in two; the allocator grew (synchronised, freed its
    old block) while sizes grew, and no launch read freed memory."""
    checked = 0
    for _, launch in _launches(run):
        meta, arguments = _scenario(run, launch["kernel"])
        fields = decode(bytes.fromhex(launch["args"]), meta, arguments)
        pointers = {pointer["offset"]: pointer for pointer in launch["pointers"]}
        blocks = fields["grid_0"] * fields["grid_1"] * fields["grid_2"]
        if _pure_simt(meta):
            assert set(pointers) == set(), launch  # no device scratch at all
            continue
        ranges = []
        for slot, size in (
            ("workspace_addr", meta.get("workspace_size", 0) * blocks),
            ("sync_block_lock", 8 * len(lock_image(meta, launch["blocks"]))),
        ):
            offset = fields[slot + "@"]
            if size == 0:
                assert fields[slot] == 0 and offset not in pointers, (launch["kernel"], slot)
                continue
            pointer = pointers[offset]
            assert not pointer["freed"], (launch["kernel"], slot, pointer)
            assert pointer["device"] == launch["device"]
            assert pointer["region_offset"] + size <= pointer["region_size"], (launch["kernel"], slot)
            ranges.append((pointer["region"], fields[slot], fields[slot] + size))
        if len(ranges) == 2:
            (region_a, start_a, end_a), (region_b, start_b, end_b) = ranges
            assert region_a == region_b, f"{launch['kernel']}: workspace and locks from two requests"
            assert end_a <= start_b or end_b <= start_a, f"{launch['kernel']}: workspace and locks overlap"
            checked += 1
    assert checked >= 30
    device_blocks = [a for a in run["report"]["allocations"] if a["label"] == "device" and a["device"] == 0]
    assert len(device_blocks) >= 2 and run["report"]["calls"]["aclrtFree"] >= 1  # the block grew
    assert run["report"]["calls"]["aclrtSynchronizeDevice"] >= run["report"]["calls"]["aclrtFree"]


def test_every_launch_sees_freshly_initialised_locks(run: dict[str, Any]) -> None:
    """The emulated kernel dirties its memory after each launch: each later launch must still see the image."""
    seen = set()
    for _, launch in _launches(run):
        meta, arguments = _scenario(run, launch["kernel"])
        image = lock_image(meta, launch["blocks"])
        if _pure_simt(meta) or not image:
            continue
        fields = decode(bytes.fromhex(launch["args"]), meta, arguments)
        pointer = next(p for p in launch["pointers"] if p["offset"] == fields["sync_block_lock@"])
        raw = bytes.fromhex(pointer["bytes"])[: 8 * len(image)]  # the emulator shows at most 4 KiB of it
        slots = [int.from_bytes(raw[i : i + 8], "little", signed=True) for i in range(0, len(raw), 8)]
        assert len(slots) == min(len(image), 512)
        assert slots == image[: len(slots)], (launch["kernel"], slots[:20], image[:20])
        seen.add(launch["kernel"])
    assert len(seen) == 3
    calls = run["report"]["calls"]
    assert calls["aclrtMemsetAsync"] >= len(SIZES) and calls["aclrtMemcpyAsync"] >= 2 * len(SIZES)


def test_simt_kernels_are_launched_with_their_dynamic_unified_buffer(run: dict[str, Any]) -> None:
    """Only SIMT kernels compiled for 910_95 (triton-ascend's launcher: ``compile_on_910_95 and enable_simt``)."""
    attributed = set()
    for _, launch in _launches(run):
        meta, _ = _scenario(run, launch["kernel"])
        simt = _pure_simt(meta) or "simt" in meta.get("parallel_mode", "")
        dynamic = simt and meta.get("compile_on_910_95", False)
        attributed.add(bool(dynamic))
        # ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE = 2 (acl_rt.h aclrtLaunchKernelAttrId)
        assert launch["attrs"] == ([{"id": 2, "value": meta["shared_mem_dynamic_size"]}] if dynamic else [])
    assert attributed == {True, False}


def test_kernels_load_once_with_the_magic_of_their_cores(run: dict[str, Any]) -> None:
    loads = run["report"]["loads"]
    on_device = {device: [load["magic"] for load in loads if load["device"] == device] for device in (0, 1)}
    modes = [SCENARIOS[kernel["scenario"]].get("mix_mode") for kernel in run["kernels"].values()]
    want = sorted(MAGIC["aiv"] if mode == "aiv" else MAGIC["other"] for mode in modes)
    assert sorted(on_device[1]) == want
    # device 0: the first kernel's load failed (nothing loaded), then its function lookup (loaded, kept nothing):
    # one load more than kernels
    first = run["report"]["launches"][0]["kernel"]
    extra = MAGIC["aiv"] if SCENARIOS[run["kernels"][first]["scenario"]].get("mix_mode") == "aiv" else MAGIC["other"]
    assert sorted(on_device[0]) == sorted([*want, extra])


def test_a_failing_acl_call_stops_the_graph_with_an_error_naming_kernel_and_call(
    run: dict[str, Any], inline_run: dict[str, Any]
) -> None:
    failed = {error["fail"]: error for error in run["errors"] + inline_run["errors"] if error["fail"]}
    assert inline_run["report"]["hazards"] == []
    assert set(failed) == {"aclrtBinaryLoadFromData", "aclrtBinaryGetFunction", *FAILING}
    for call, error in failed.items():
        assert error["type"] == "RuntimeError"
        assert call in error["message"] and "507899" in error["message"], error
        assert error["message"].startswith("NPU kernel triton_"), error


def test_a_grid_over_the_launch_limit_is_refused_naming_the_kernel_and_the_grid(run: dict[str, Any]) -> None:
    (error,) = [error for error in run["errors"] if error["fail"] is None]
    assert "grid (65536, 1, 1) is 65536 blocks; an NPU launch takes at most 65535" in error["message"]
    assert "TRITON_ALL_BLOCKS_PARALLEL=1" in error["message"]
    first = next(name for name, kernel in run["kernels"].items() if kernel["scenario"] == 0)
    assert error["message"].startswith(f"NPU kernel {first}:")
    assert all(launch["blocks"] <= 65535 for launch in run["report"]["launches"])


def test_all_blocks_parallel_caps_blockdim_at_the_cores_of_the_tensors_device(run: dict[str, Any]) -> None:
    """On device 1 (its own core counts), in all-blocks-parallel mode: vector cores for "aiv" kernels, AI cores
    otherwise; lock participants follow the capped count (checked by the lock image test)."""
    capped = 0
    for call, launch in _launches(run):
        meta, arguments = _scenario(run, launch["kernel"])
        fields = decode(bytes.fromhex(launch["args"]), meta, arguments)
        blocks = fields["grid_0"] * fields["grid_1"] * fields["grid_2"]
        assert launch["device"] == call["device"]
        if call["device"] == 0:
            assert launch["blocks"] == blocks
            continue
        ai, vector = CORES[1]
        assert launch["blocks"] == min(blocks, vector if meta.get("mix_mode") == "aiv" else ai), launch["kernel"]
        capped += launch["blocks"] < blocks
    assert capped >= 3
    assert run["report"]["calls"]["aclrtGetDeviceInfo"] == 2  # asked once per device and core kind


OLD_LAUNCH = r"""
#include <ATen/ATen.h>
#include <torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h>
#include "emulated_acl.h"
// The launch as this package generated it before: workspace and locks as two requests on the launch stream.
extern "C" int old_launch(uint64_t workspace_bytes, uint64_t lock_bytes) {
  aclrtStream stream = emulated_acl_stream(0);
  at::Tensor workspace = at_npu::native::allocate_workspace(workspace_bytes, stream);
  at::Tensor locks = at_npu::native::allocate_workspace(lock_bytes, stream);
  if (workspace.data_ptr() != nullptr || locks.data_ptr() != nullptr) return 1;  // no elements: null data_ptr()
  void* args[2] = {const_cast<void*>(locks.storage().data()), const_cast<void*>(workspace.storage().data())};
  std::string* kernel = new std::string("old_launch");
  aclrtMemsetAsync(args[0], lock_bytes, 0, lock_bytes, stream);
  return aclrtLaunchKernelWithHostArgs(kernel, 1, stream, nullptr, args, sizeof(args), nullptr, 0);
}
"""

OLD_LAUNCH_RUN = """
import ctypes, json, sys
from npu_inductor_compat.tools.simulated.npu import device
device.setup()
old = ctypes.CDLL(sys.argv[1])
acl = ctypes.CDLL(sys.argv[2])
acl.emulated_acl_report.restype = ctypes.c_char_p
codes = [old.old_launch(ctypes.c_uint64(1024), ctypes.c_uint64(64)),  # both fit the stream's block
         old.old_launch(ctypes.c_uint64(64), ctypes.c_uint64(3 << 20))]  # the lock request grows the block
acl.emulated_acl_synchronize_all()
print(json.dumps({"codes": codes, "report": json.loads(acl.emulated_acl_report())}))
"""


def test_the_emulation_catches_the_two_request_launch_this_package_used_to_generate(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """Shown able to fail: against the allocator as torch_npu wrote it, two requests on one stream alias when both
    fit, and when the second grows the block it frees the first before the launch; data_ptr() is null."""
    from torch.utils.cpp_extension import include_paths, library_paths

    from npu_inductor_compat.tools.simulated.codegen.headers import _cpp_standard

    source = tmp_path / "old_launch.cpp"
    source.write_text(textwrap.dedent(OLD_LAUNCH))
    library = tmp_path / "libold_launch.so"
    lib = emulated_npu.torch_npu_home / "lib"
    command = [
        "g++",
        _cpp_standard(),
        "-shared",
        "-fPIC",
        "-w",
        f"-I{EMULATED}",
        f"-I{emulated_npu.torch_npu_home / 'include'}",
        *(f"-I{path}" for path in include_paths()),
        str(source),
        "-o",
        str(library),
        f"-L{lib}",
        f"-L{emulated_npu.libascendcl.parent}",
        *(f"-L{path}" for path in library_paths()),
        "-ltorch_npu",
        "-lascendcl",
        "-lc10",
        "-ltorch_cpu",
        f"-Wl,-rpath,{lib}",
        f"-Wl,-rpath,{emulated_npu.libascendcl.parent}",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    done = subprocess.run(
        [sys.executable, "-c", OLD_LAUNCH_RUN, str(library), str(emulated_npu.libascendcl)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 0]
    first, second = result["report"]["launches"]
    lock, workspace = (int.from_bytes(bytes.fromhex(first["args"])[i : i + 8], "little") for i in (0, 8))
    assert lock == workspace  # the same block for both: every lock write lands in the workspace
    assert any("reads freed device memory" in hazard for hazard in result["report"]["hazards"])
    assert second["pointers"][1]["freed"] and not second["pointers"][0]["freed"]


# What a wrapper needs from libtorch_npu is held against the paired wheel's real exports: every wrapper with this
# package's launch calls LAUNCH; HIDDEN is torch_npu's OpPreparation::unsafe_empty_workspace(size), where this
# package's launch first took its calling-thread scratch, hidden in every release (built with -fvisibility=hidden).
LAUNCH = "aclrtLaunchKernelWithHostArgs"
HIDDEN = "_ZN6at_npu6native13OpPreparation22unsafe_empty_workspaceEm"


def test_a_wrapper_binds_only_to_what_the_real_libtorch_npu_exports(
    emulated_npu: Any, run: dict[str, Any], tmp_path: Path
) -> None:
    """Every wrapper built this session (at least this module's, of every launch scenario: workspace, locks, the
    queue's and the calling thread's scratch) needs from libtorch_npu only symbols the paired release's library
    exports: a hidden one links against the stub and fails to load on hardware ("undefined symbol"). Shown able to
    fail: the function this package's launch first called for calling-thread scratch is absent from the real
    exports."""
    version, real = harness.real_exports(tmp_path)
    assert HIDDEN not in real, f"torch_npu {version} exports unsafe_empty_workspace"
    stub = harness.symbols(emulated_npu.torch_npu_home / "lib" / "libtorch_npu.so", defined=True)
    wrappers = {}
    for library in (emulated_npu.work / "inductor").rglob("*.so"):
        needed = harness.symbols(library, defined=False)
        if LAUNCH in needed:
            wrappers[library.name] = needed & stub
    assert wrappers, "no wrapper with this package's launch was built"
    assert any("MallocBlock" in name for needed in wrappers.values() for name in needed), wrappers
    missing = {name: sorted(needed - real) for name, needed in wrappers.items() if needed - real}
    assert missing == {}, f"symbols torch_npu {version}'s libtorch_npu.so does not export: {missing}"
