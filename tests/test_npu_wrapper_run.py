"""The whole NPU C++ wrapper, built, linked and run (fixes cpp-wrapper-workspace-locks and autotuner-kernel-metadata).

There is no NPU here, so this runs the real thing one level below it. Inductor generates the complete C++ wrapper of a
four-kernel graph for the simulated NPU (``cpp_wrapper=True``, dynamic shapes), compiles it and links it with this
package's build options for "npu" against libtorch_npu and libascendcl, loads it and calls it with real input tensors.
The two libraries are stubs built from emulations of torch_npu's workspace allocator and of the ACL runtime
(tests/emulated_acl: each modelled on the real component's source, cited there, and compiled against the real
torch_npu and ACL headers of the torch_npu wheel paired with this torch line). Only the Triton kernels do not run: the
emulated ACL records every launch (kernel, device, blockDim, launch attributes, the packed argument bytes, the memory
each argument points into) and dirties the memory it was given, as a kernel may.

Each kernel gets the metadata of one scenario. What is checked is computed here from the sources (triton-ascend's
launcher for the argument layout, lock layout and block rules; torch_npu's allocator for the memory), not from the
package's code: every tensor pointer, scalar, workspace and lock pointer in its slot for every launch; workspace and
locks never overlap and are never freed before the launch that uses them, across sizes that grow and shrink; the lock
contents each launch sees; the launch limit and all-blocks-parallel capping; the device; ACL failures.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

HERE = Path(__file__).resolve().parent
EMULATED = HERE / "emulated_acl"
MIX = {"mix_mode": "mix", "auto_tile_and_bind_subblock": True}
SCENARIOS: list[dict[str, Any]] = [
    # workspace (per block a multiple of 8 bytes, not of 64: the locks after it must still start on a 64-byte
    # boundary) + lock_num locks initialised to 0 (a stream-ordered memset), on vector cores
    {"workspace_size": 65544, "lock_num": 3, "lock_init_val": 0, "mix_mode": "aiv"},
    # packed layout: 2 ordered + 1 unordered lock in mix mode (participants x2); triton-ascend starts the ordered
    # slots at 0 beside unordered locks whatever lock_init_val says
    {"workspace_size": 4096, "sync_block_lock_layout": (1 << 32) | 2, "lock_init_val": 7, **MIX},
    # pure SIMT under newer triton-ascend's name, compiled for 910_95: no lock or workspace pointer, a dynamic
    # unified buffer
    {
        "is_pure_simt": True,
        "parallel_mode": "simt",
        "shared_mem_dynamic_size": 122880,
        "workspace_size": 64,
        "compile_on_910_95": True,
    },
    # triton-ascend 3.2.0's spelling of the init value (5: not one byte repeated, so a copy from a host image), SIMT
    # parallel mode beside locks, compiled for another SoC than 910_95: no dynamic unified buffer
    {"lock_num": 2, "lock_init_value": 5, "mix_mode": "aic", "parallel_mode": "simt", "shared_mem_dynamic_size": 4096},
]
CORES = {0: (24, 48), 1: (20, 40)}  # (AI cores, vector cores) per emulated device
# multiples of 16 that grow and shrink (no 16-row input: a dimension of 1 would specialise the graph)
SIZES = [64, 4096, 32, 65536, 128, 2048, 256, 32768, 96, 8192] * 3 + [512, 160, 1024]
FAILING = [
    "aclrtMallocHost",
    "aclrtMemsetAsync",
    "aclrtMemcpyAsync",
    "aclrtGetHardwareSyncAddr",
    "aclrtLaunchKernelWithHostArgs",
]
PLAN = {
    "scenarios": SCENARIOS,
    "cores": {str(device): list(cores) for device, cores in CORES.items()},
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
MAGIC = {"aiv": 0x41415246, "other": 0x43554245}  # ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE / _AICORE (acl_rt.h)


def _load_build() -> Any:
    spec = importlib.util.spec_from_file_location("emulated_acl_build", EMULATED / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def emulated_npu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import torch

    from npu_inductor_compat.tools.simulated import headers

    try:
        (source,) = headers.torch_npu_headers(torch.__version__)
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"no torch_npu headers to build the emulated runtime against: {err}")
    return _load_build().build(tmp_path_factory.mktemp("emulated_npu"), source.include)


def _run_plan(
    emulated_npu: Any, plan: dict[str, Any], directory: Path, env: dict[str, str] | None = None
) -> dict[str, Any]:
    path = directory / "plan.json"
    path.write_text(json.dumps(plan))
    queue = ("TASK_QUEUE_ENABLE", "ASCEND_LAUNCH_BLOCKING")  # torch_npu's default: the queue on, at level 1
    env = {
        **{key: value for key, value in os.environ.items() if key not in queue},
        **emulated_npu.env(),
        "NPU_INDUCTOR_COMPAT_AUTOLOAD": "0",
        **(env or {}),
    }
    done = subprocess.run(
        [sys.executable, str(EMULATED / "run_wrapper.py"), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=directory,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def run(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_plan(emulated_npu, PLAN, tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def inline_run(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_plan(emulated_npu, INLINE_PLAN, tmp_path_factory.mktemp("inline"), {"TASK_QUEUE_ENABLE": "0"})


# ---------------------------------------------------------------------------------------------- expectations
def _pure_simt(meta: dict[str, Any]) -> bool:
    return bool(meta.get("force_simt_only") or meta.get("is_pure_simt"))


def _c_type(signature: str) -> tuple[int, str]:
    """(size, struct format) of a scalar as triton-ascend's launcher passes it (driver.py ty_to_cpp)."""
    table = {"i1": (4, "i"), "i8": (1, "b"), "i16": (2, "h"), "i32": (4, "i"), "i64": (8, "q"), "u1": (4, "I")}
    table |= {"u8": (1, "B"), "u16": (2, "H"), "u32": (4, "I"), "u64": (8, "Q")}
    table |= {"fp16": (4, "f"), "bf16": (4, "f"), "fp32": (4, "f"), "fp64": (8, "d")}
    return table[signature]


def decode(args: bytes, meta: dict[str, Any], arguments: list[list[str]]) -> dict[str, Any]:
    """The packed argument struct as triton-ascend's launcher lays it out (driver.py, make_launcher): [ffts_addr,]
    [sync_block_lock, workspace_addr,] arguments, grid_0..2; pointers and 64-bit scalars 8-aligned, the rest
    4-aligned; the struct padded to a multiple of 8."""
    import struct

    offset, fields = 0, {}

    def take(name: str, size: int, form: str, align: int) -> None:
        nonlocal offset
        offset = (offset + align - 1) // align * align
        fields[name] = struct.unpack_from("<" + form, args, offset)[0]
        fields[name + "@"] = offset
        offset += size

    take("ffts_addr", 8, "Q", 8)  # the simulated NPU follows triton-ascend's rule: FFTS unless disabled
    if not _pure_simt(meta):
        take("sync_block_lock", 8, "Q", 8)
        take("workspace_addr", 8, "Q", 8)
    for name, signature in arguments:
        if signature.startswith("*"):
            take(name, 8, "Q", 8)
        else:
            size, form = _c_type(signature)
            take(name, size, form, 8 if size == 8 else 4)
    for axis in range(3):
        take(f"grid_{axis}", 4, "i", 4)
    assert len(args) == (offset + 7) // 8 * 8, f"argument struct is {len(args)} bytes, the layout {offset}"
    return fields


def lock_image(meta: dict[str, Any], block_dim: int) -> list[int]:
    """The int64 slots a launch's lock buffer must hold before the kernel runs (DESIGN.md §2b; triton-ascend
    make_launcher's sync_block_lock_layout)."""
    layout = meta.get("sync_block_lock_layout", 0)
    init = meta.get("lock_init_val", meta.get("lock_init_value", 0))
    if not layout:
        return [init] * meta.get("lock_num", 0)
    ordered, unordered = layout & 0xFFFFFFFF, layout >> 32
    mix = meta.get("mix_mode") == "mix" and meta.get("auto_tile_and_bind_subblock")
    participants = block_dim * (2 if unordered and mix else 1)
    one = [participants] + [0] * ((1 + 2 * participants) * 8 - 1)
    return [0 if unordered else init] * (ordered * 8) + one * unordered


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
from npu_inductor_compat.tools.simulated import device
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

    from npu_inductor_compat.tools.simulated.headers import _cpp_standard

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


# ---------------------------------------------------------------------------------------------- the task queue
def _mm_plan(**options: Any) -> dict[str, Any]:
    return {"graph": "mm", "scenarios": [SCENARIOS[0]], "cores": PLAN["cores"], "calls": 2, **options}


def _kernels_around_the_product(order: list[str]) -> list[str]:
    return ["launch" if item.startswith("launch triton_") else item.split()[0] for item in order]


def test_a_torch_npu_op_between_two_kernels_reaches_the_stream_in_program_order(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """A Triton kernel, torch_npu's matmul through its C shim (queued work, as op-plugin issues it), a Triton kernel,
    with the queue's consumer not scheduled until the call has returned: each launch goes through the same queue, so
    the stream runs them in program order and the second kernel is given the product after it was written."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True), tmp_path)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert call["hazards"] == [], call["hazards"]


def test_with_the_queue_off_the_order_is_the_same(emulated_npu: Any, tmp_path: Path) -> None:
    found = _run_plan(emulated_npu, _mm_plan(), tmp_path, {"TASK_QUEUE_ENABLE": "0"})
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert call["hazards"] == [], call["hazards"]


def test_a_stream_the_user_selects_gets_every_launch_and_the_product(emulated_npu: Any, tmp_path: Path) -> None:
    """With another stream than the default one selected on the calling thread (torch_npu: thread-local, per
    device), the wrapper takes it at the call and every kernel, its scratch and the product go there, in program
    order (one queue per device, whatever the stream: torch_npu without PER_STREAM_QUEUE)."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True, stream=1), tmp_path)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "callback", "launch"], call["order"]
        assert all(item.endswith(" on device 0 stream 1") for item in call["order"]), call["order"]
        assert call["hazards"] == [], call["hazards"]


def test_the_ordering_test_fails_against_the_launch_straight_onto_the_stream(emulated_npu: Any, tmp_path: Path) -> None:
    """Shown able to fail: the launch as this package generated it before (from the calling thread, straight onto
    the stream) overtakes the queued product: the second kernel runs before the product and reads what it has not
    written yet."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True, launch="direct"), tmp_path)
    for call in found["calls"]:
        assert _kernels_around_the_product(call["order"]) == ["launch", "launch", "callback"], call["order"]
        assert any("reads memory aclnnMm (issued before it) has not written yet" in h for h in call["hazards"])


def test_an_acl_error_in_queued_work_surfaces_at_the_next_drain_naming_the_kernel(
    emulated_npu: Any, tmp_path: Path
) -> None:
    """As torch_npu's queue reports it: the call returns (the launch is only queued), the failing entry puts the
    queue in its error state, and the next drain (here the device synchronisation) raises naming the operator."""
    found = _run_plan(emulated_npu, _mm_plan(hold_queue=True, calls=1, fail="aclrtLaunchKernelWithHostArgs"), tmp_path)
    (call,) = found["calls"]
    (error,) = call["errors"]
    assert error["at"] == "synchronize", error
    assert "current working operator name is triton_poi_fused_add_sin_0" in error["message"], error
    assert (
        "NPU kernel triton_poi_fused_add_sin_0" in error["message"]
        and "aclrtLaunchKernelWithHostArgs" in error["message"]
    ), error
    assert call["order"] == [], call["order"]  # the rest of the queue was dropped, as torch_npu drops it


def test_an_aclgraph_capture_is_refused_at_the_call_naming_the_kernel(emulated_npu: Any, tmp_path: Path) -> None:
    """The launch's workspace comes from torch_npu's per-stream block, which a later launch may free under a captured
    graph: with the stream capturing (aclmdlRICaptureGetInfo), the call fails before anything is queued."""
    found = _run_plan(emulated_npu, _mm_plan(calls=1, capturing=True), tmp_path)
    (call,) = found["calls"]
    (error,) = call["errors"]
    assert error["at"] == "call", error
    assert error["message"].startswith("NPU kernel triton_poi_fused_add_sin_0: the stream is being captured into an")
    assert "aclgraph" in error["message"] and "cpp_wrapper" in error["message"], error
    assert call["order"] == [] and call["hazards"] == [], call


# ---------------------------------------------------------------------------------------------- several host threads
@pytest.mark.parametrize("queue", ["0", "1"])
def test_two_host_threads_in_the_wrapper_with_a_small_lock_image_budget(
    emulated_npu: Any, tmp_path: Path, queue: str
) -> None:
    """The whole wrapper on two host threads at once, sizes chosen so that the packed-lock kernel needs a new lock
    image on almost every call and a 4 KiB budget evicts the images all the time: with the task queue off each thread
    launches itself, with it on both feed one queue. Nothing may read freed memory, pinned or device (the emulation
    keeps freed memory poisoned), and every call completes."""
    sizes = [[64, 4096, 32, 128, 2048, 256], [96, 8192, 160, 512, 1024, 352]]
    plan = {
        "graph": "threads",
        "record": False,
        "scenarios": SCENARIOS,
        "cores": PLAN["cores"],
        "threads": 2,
        "iterations": 4,
        "sizes": sizes,
    }
    env = {"TASK_QUEUE_ENABLE": queue, "NPU_INDUCTOR_COMPAT_LOCK_IMAGE_BUDGET": "4096"}
    found = _run_plan(emulated_npu, plan, tmp_path, env)
    assert found["errors"] == [], found["errors"]
    assert found["calls"] == 4 * sum(len(mine) for mine in sizes)
    assert found["hazards"] == [], found["hazards"][:5]
    assert found["acl"]["aclrtFreeHost"] >= 10, found["acl"]  # the budget evicted images again and again


# ---------------------------------------------------------------------------------------------- lock images, 2 threads
RACE = r"""
#include "runtime.h"
#include "emulated_acl.h"
#include <atomic>
#include <cstdio>
#include <thread>
// Two host threads (the task queue off: each runs its launches itself), one lock image each, the second past the
// images' budget so that it evicts the first. Thread A is held between looking its image up and queuing the copy
// until B has evicted: with `split`, A looks up and copies as this package's launch did before (the images' lock
// released in between); without, A uses copy_lock_image, and B can only evict before the look-up or after the copy.
extern "C" int race(int split) {
  using namespace npu_inductor_compat_rt;
  aclrtStream stream = emulated_acl_stream(0);
  const LockLayout a = lock_layout(5ULL << 20, 0, 1, "kernel_a");  // 40 MiB of ordered slots
  const LockLayout b = lock_layout((5ULL << 20) + 8, 0, 1, "kernel_b");  // 40 MiB more: past the 64 MiB budget
  void* locks_a = nullptr;
  void* locks_b = nullptr;
  if (aclrtMalloc(&locks_a, a.bytes, ACL_MEM_MALLOC_HUGE_ONLY)) return 1;
  if (aclrtMalloc(&locks_b, b.bytes, ACL_MEM_MALLOC_HUGE_ONLY)) return 1;
  std::atomic<int> step{0};
  std::thread first([&] {
    if (split) {
      const void* image;
      {
        std::lock_guard<std::mutex> hold(lock_images_guard());
        image = lock_image(a, 7, 0, "kernel_a");
      }
      step = 1;
      while (step != 2) std::this_thread::yield();
      aclrtMemcpyAsync(locks_a, a.bytes, image, a.bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    } else {
      copy_lock_image(locks_a, a, 7, 0, stream, "kernel_a");
      step = 1;
      while (step != 2) std::this_thread::yield();
    }
  });
  std::thread second([&] {
    while (step != 1) std::this_thread::yield();
    copy_lock_image(locks_b, b, 9, 0, stream, "kernel_b");
    step = 2;
  });
  first.join();
  second.join();
  emulated_acl_synchronize_all();
  return static_cast<const int64_t*>(locks_a)[0] == 7 ? 0 : 2;  // what kernel_a's locks start at
}

// blockDim of an all-blocks-parallel launch of 65535 blocks on device 0, or -1 and the error.
extern "C" long long capped(int vector, char* error, int size) {
  try {
    return npu_inductor_compat_rt::block_dim(65535, true, 0, vector != 0, "kernel_a");
  } catch (const std::exception& err) {
    std::snprintf(error, size, "%s", err.what());
    return -1;
  }
}

// The budget as the runtime reads it from NPU_INDUCTOR_COMPAT_LOCK_IMAGE_BUDGET, or its error.
extern "C" long long budget(char* error, int size) {
  try {
    return static_cast<long long>(npu_inductor_compat_rt::lock_image_budget("kernel_a"));
  } catch (const std::exception& err) {
    std::snprintf(error, size, "%s", err.what());
    return -1;
  }
}
"""

RACE_RUN = """
import ctypes, json, sys
race = ctypes.CDLL(sys.argv[1])
acl = ctypes.CDLL(sys.argv[2])
acl.emulated_acl_report.restype = ctypes.c_char_p
code = race.race(int(sys.argv[3])) if sys.argv[3] in ("0", "1") else None
if sys.argv[3] == "cores":  # the same process for every value: the runtime reads NPU_DEVICE_LIMIT at each launch
    import os
    acl.emulated_acl_set_cores.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64]
    acl.emulated_acl_set_cores(0, 24, 48)
    race.capped.restype = ctypes.c_longlong
    found = {}
    for value in json.loads(sys.argv[4]):
        os.environ["NPU_DEVICE_LIMIT"] = value
        error = ctypes.create_string_buffer(512)
        found[value] = [race.capped(vector, error, 512) for vector in (1, 0)] + [error.value.decode()]
    print(json.dumps(found))
    sys.exit(0)
report = json.loads(acl.emulated_acl_report())
error = ctypes.create_string_buffer(512)
race.budget.restype = ctypes.c_longlong
budget = race.budget(error, 512)
print(json.dumps({"code": code, "hazards": report["hazards"], "frees": report["calls"].get("aclrtFreeHost", 0),
                  "budget": budget, "budget_error": error.value.decode()}))
"""


@pytest.fixture(scope="module")
def runtime_program(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The launch runtime header compiled on its own into a small program (RACE) against the emulated ACL; returns
    run(mode, *args, env=...) -> the JSON line RACE_RUN prints."""
    from torch.utils.cpp_extension import include_paths

    from npu_inductor_compat.common import npu_launch
    from npu_inductor_compat.tools.simulated.headers import _cpp_standard

    folder = tmp_path_factory.mktemp("runtime_program")
    (folder / "runtime.h").write_text(npu_launch.runtime_source())
    source = folder / "race.cpp"
    source.write_text(RACE)
    library = folder / "librace.so"
    command = [
        "g++",
        _cpp_standard(),
        "-O1",
        "-shared",
        "-fPIC",
        "-w",
        f"-I{folder}",
        f"-I{EMULATED}",
        f"-I{emulated_npu.torch_npu_home / 'include'}",
        f"-I{emulated_npu.torch_npu_home / 'include' / 'third_party' / 'acl' / 'inc'}",
        *(f"-I{path}" for path in include_paths()),
        str(source),
        "-o",
        str(library),
        f"-L{emulated_npu.libascendcl.parent}",
        "-lascendcl",
        "-pthread",
        f"-Wl,-rpath,{emulated_npu.libascendcl.parent}",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    ours = ("NPU_INDUCTOR_COMPAT_LOCK_IMAGE_BUDGET", "NPU_DEVICE_LIMIT")
    clean = {key: value for key, value in os.environ.items() if key not in ours}

    def run(mode: str, *args: str, env: dict[str, str] | None = None) -> Any:
        done = subprocess.run(
            [sys.executable, "-c", RACE_RUN, str(library), str(emulated_npu.libascendcl), mode, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            env={**clean, **(env or {})},
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run


def test_a_lock_image_is_never_freed_between_its_look_up_and_its_copy(runtime_program: Any) -> None:
    """Two host threads against the emulated ACL, the interleaving forced: the second thread's new image evicts the
    first's. With the copy queued under the images' lock the first thread's locks start at their value and nothing is
    freed under a copy; with the look-up and the copy split, as this package's launch was, the copy is queued from
    freed memory (shown able to fail)."""
    together, split = runtime_program("0"), runtime_program("1")
    assert {key: together[key] for key in ("code", "hazards", "frees")} == {"code": 0, "hazards": [], "frees": 1}
    assert split["frees"] == 1 and split["code"] == 2, split
    assert "aclrtMemcpyAsync queued from a host buffer aclrtFreeHost already freed" in split["hazards"]


def test_the_lock_image_budget_is_64_mib_unless_set_and_a_bad_value_names_itself(runtime_program: Any) -> None:
    budget = "NPU_INDUCTOR_COMPAT_LOCK_IMAGE_BUDGET"
    assert runtime_program("budget")["budget"] == 64 << 20
    assert runtime_program("budget", env={budget: "4096"})["budget"] == 4096
    bad = runtime_program("budget", env={budget: "64M"})
    assert bad["budget"] == -1 and bad["budget_error"] == (
        f"NPU kernel kernel_a: {budget}=64M is not a byte count (expected a positive integer; unset means 67108864)"
    ), bad


def test_npu_device_limit_caps_all_blocks_parallel_launches_as_torch_npu_reads_it(runtime_program: Any) -> None:
    """torch_npu's Inductor (master, _inductor/config.py) caps its cores with NPU_DEVICE_LIMIT="cube,vector" and
    exits on a malformed value; a launch here caps at the limit of its kind and fails naming the variable."""
    limits = ["", "12,24", " 6 , 12 ", "12,30", "30,60", "0,0", "abc", "12"]
    cores = runtime_program("cores", json.dumps(limits))
    # unset: the device's 48 vector / 24 AI cores; a limit caps each kind
    assert [cores[value][:2] for value in ("", "12,24", " 6 , 12 ")] == [[48, 24], [24, 12], [12, 6]]
    for value in limits[3:]:
        assert cores[value][:2] == [-1, -1], (value, cores[value])
        assert cores[value][2] == (
            f"NPU kernel kernel_a: NPU_DEVICE_LIMIT='{value}': expected 'cube_cores,vector_cores', two positive "
            "integers at most this device's 24,48 with vector = cube x 2"
        ), cores[value]
