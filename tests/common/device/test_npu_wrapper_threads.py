"""The NPU C++ wrapper on several host threads, and the launch runtime alone: the real wrapper on the simulated NPU
against the stub libtorch_npu and libascendcl of test_npu_wrapper_queue.py, and the runtime header compiled on its own
against the emulated ACL (a file of its own so that pytest-xdist runs it beside the queue tests)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

from npu_inductor_compat.tools.simulated.execution import emulated_runtime

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

EMULATED = emulated_runtime.HERE  # emulated_acl.h, the emulated ACL's host side

SCENARIOS = harness.SCENARIOS
_run_plan = harness.run_plan


# ---------------------------------------------------------------------------------------------- several host threads
@pytest.mark.parametrize("queue", ["0", "1"])
def test_two_host_threads_in_the_wrapper_with_a_small_lock_image_budget(
    emulated_npu: Any, tmp_path: Path, queue: str
) -> None:
    """The whole wrapper on two host threads at once, sizes chosen so that the packed-lock kernel needs a new lock
    image on almost every call and a 4 KiB budget evicts the images all the time: with the task queue off each thread
    launches itself, with it on both feed one queue. Nothing may read freed memory, pinned or device (the emulation
    keeps freed memory poisoned), and every call completes. Queue off, each launch's scratch comes from the caching
    allocator; on, from the per-stream workspace block."""
    sizes = [[64, 4096, 32, 128, 2048, 256], [96, 8192, 160, 512, 1024, 352]]
    plan = {
        "graph": "threads",
        "record": False,
        "scenarios": SCENARIOS,
        "cores": harness.PLAN_CORES,
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
    if queue == "1":  # the queue's thread took every launch's scratch from the per-stream block, which grew
        assert found["acl"].get("aclrtFree", 0) >= 1, found["acl"]
    else:  # each thread took its scratch from the caching allocator (no per-stream block was made)
        assert found["acl"].get("aclrtMallocAlign32", 0) == 0 and found["acl"].get("aclrtMalloc", 0) >= 1, found["acl"]


@pytest.mark.parametrize("launch", ["queued", pytest.param("before-queue", marks=pytest.mark.once)])  # its text: once
@pytest.mark.parametrize("other", ["larger request", "out of memory"])
def test_another_thread_never_frees_a_launchs_scratch_with_the_queue_off(
    emulated_npu: Any, tmp_path: Path, launch: str, other: str
) -> None:
    """Two host threads with the task queue off, the interleaving forced: the first thread's scratch request, once
    served, is held until the second thread has made a larger request of its own, or emptied torch_npu's caches as
    the caching allocator's out-of-memory retry does (npuSynchronizeDevice, then every workspace block of the device
    and every cached block freed). With the queue off a launch takes its scratch from the caching allocator, where
    nothing frees a live block: no hazard. Shown able to fail: the launch as this package generated it before the
    task queue (its scratch from torch_npu's per-stream workspace block on the calling thread) is given freed memory,
    both ways."""
    plan = {
        "graph": "threads",
        "record": False,
        "scenarios": [{"workspace_size": 65536}],
        "cores": harness.PLAN_CORES,
        "threads": 2,
        "iterations": 1,
        "sizes": [[64], [65536]],
        "pause": True,
        "empty_cache": other == "out of memory",
        **({"launch": launch} if launch != "queued" else {}),
    }
    found = _run_plan(emulated_npu, plan, tmp_path, {"TASK_QUEUE_ENABLE": "0"})
    assert found["errors"] == [], found["errors"]
    assert found["calls"] == 2
    if launch == "queued":
        assert found["hazards"] == [], found["hazards"][:5]
        assert found["acl"].get("aclrtMallocAlign32", 0) == 0, found["acl"]  # no workspace block was made
    else:
        assert found["acl"].get("aclrtFree", 0) >= 1, found["acl"]  # the block grew, or was emptied
        assert any("reads freed device memory" in hazard for hazard in found["hazards"]), found["hazards"][:5]


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
        image = lock_image(a, 7, 0, "kernel_a").host;
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

#ifdef WITH_CAPTURE  // built against an ACL with aclgraph capture
// Another thread captures device 0's second stream into an aclgraph in global mode while this one needs two lock images
// (the second past the budget, so it evicts the first): returns what the direct calls ACL refuses then answered (a
// pinned allocation in this thread's mode; a device synchronisation even relaxed), or -1 when a launch's copy failed.
extern "C" int under_capture(int* refused_malloc, int* refused_sync) {
  using namespace npu_inductor_compat_rt;
  aclrtStream stream = emulated_acl_stream(0);
  aclrtStream captured = emulated_acl_stream_at(0, 1);
  const LockLayout a = lock_layout(5ULL << 20, 0, 1, "kernel_a");
  const LockLayout b = lock_layout((5ULL << 20) + 8, 0, 1, "kernel_b");
  void* locks_a = nullptr;
  void* locks_b = nullptr;
  if (aclrtMalloc(&locks_a, a.bytes, ACL_MEM_MALLOC_HUGE_ONLY)) return 1;
  if (aclrtMalloc(&locks_b, b.bytes, ACL_MEM_MALLOC_HUGE_ONLY)) return 1;
  std::atomic<int> step{0};
  std::thread other([&] {
    if (aclmdlRICaptureBegin(captured, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) != ACL_SUCCESS) step = -1;
    else step = 1;
    while (step == 1) std::this_thread::yield();
    aclmdlRI model = nullptr;
    aclmdlRICaptureEnd(captured, &model);
  });
  while (step == 0) std::this_thread::yield();
  int code = step == 1 ? 0 : 3;
  void* pinned = nullptr;
  *refused_malloc = aclrtMallocHost(&pinned, 64);
  {
    const RelaxedCapture relaxed;
    *refused_sync = aclrtSynchronizeDevice();
  }
  try {
    copy_lock_image(locks_a, a, 7, 0, stream, "kernel_a");
    copy_lock_image(locks_b, b, 9, 0, stream, "kernel_b");
  } catch (const std::exception& err) {
    std::fprintf(stderr, "%s\n", err.what());
    code = -1;
  }
  step = 2;
  other.join();
  emulated_acl_synchronize_all();
  if (code == 0 && (static_cast<const int64_t*>(locks_a)[0] != 7 || static_cast<const int64_t*>(locks_b)[0] != 9)) {
    code = 2;
  }
  return code;
}
#endif

// Its library's lock-image lock, and a copy queued from one of its images (40 MiB of locks starting at `init`).
extern "C" const void* state_address() { return &npu_inductor_compat_rt::lock_images_guard(); }
extern "C" void* queue_copy(int64_t init, uint64_t extra) {
  using namespace npu_inductor_compat_rt;
  const LockLayout layout = lock_layout((5ULL << 20) + extra, 0, 1, "kernel_a");
  void* locks = nullptr;
  if (aclrtMalloc(&locks, layout.bytes, ACL_MEM_MALLOC_HUGE_ONLY)) return nullptr;
  copy_lock_image(locks, layout, init, 0, emulated_acl_stream(0), "kernel_a");
  return locks;
}

// Two launches on device 0, one given device memory 32 bytes past an allocation's start, one its start.
extern "C" int misaligned() {
  void* base = nullptr;
  aclrtFuncHandle kernel = nullptr;
  if (aclrtMalloc(&base, 4096, ACL_MEM_MALLOC_HUGE_ONLY)) return 1;
  if (aclrtBinaryGetFunction(nullptr, "kernel_a", &kernel)) return 1;
  for (void* arg : {static_cast<void*>(static_cast<char*>(base) + 32), base}) {
    aclrtStream stream = emulated_acl_stream(0);
    if (aclrtLaunchKernelWithHostArgs(kernel, 1, stream, nullptr, &arg, sizeof(arg), nullptr, 0)) return 1;
  }
  emulated_acl_synchronize_all();
  return 0;
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
race = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
acl = ctypes.CDLL(sys.argv[2])
acl.emulated_acl_report.restype = ctypes.c_char_p
code = race.race(int(sys.argv[3])) if sys.argv[3] in ("0", "1") else None
if sys.argv[3] == "misaligned":
    code = race.misaligned()
if sys.argv[3] == "two":  # the same runtime in two libraries, loaded into one global symbol scope
    other = ctypes.CDLL(sys.argv[1].replace("librace.so", "librace2.so"), mode=ctypes.RTLD_GLOBAL)
    for library in (race, other):
        library.state_address.restype = ctypes.c_void_p
        library.queue_copy.restype = ctypes.POINTER(ctypes.c_int64)
        library.queue_copy.argtypes = [ctypes.c_int64, ctypes.c_uint64]
    locks = race.queue_copy(7, 0)
    other.queue_copy(9, 8)
    acl.emulated_acl_synchronize_all()  # both copies ran: either image could be freed now
    other.queue_copy(11, 16)  # past the other library's budget: it evicts its own image, and only its own
    acl.emulated_acl_synchronize_all()
    report = json.loads(acl.emulated_acl_report())
    print(json.dumps({"addresses": [race.state_address(), other.state_address()], "first": locks[0],
                      "hazards": report["hazards"], "frees": report["calls"].get("aclrtFreeHost", 0)}))
    sys.exit(0)
if sys.argv[3] == "capture":
    refused = [ctypes.c_int(), ctypes.c_int()]
    code = race.under_capture(ctypes.byref(refused[0]), ctypes.byref(refused[1]))
    report = json.loads(acl.emulated_acl_report())
    print(json.dumps({"code": code, "refused": [value.value for value in refused], "hazards": report["hazards"],
                      "calls": report["calls"]}))
    sys.exit(0)
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


def _program(npu: Any, folder: Path, *defines: str) -> Any:
    """The launch runtime header compiled on its own into a small program (RACE) against ``npu``'s emulated ACL;
    returns run(mode, *args, env=...) -> the JSON line RACE_RUN prints."""
    from torch.utils.cpp_extension import include_paths

    from npu_inductor_compat.common.device import npu_launch
    from npu_inductor_compat.tools.simulated.codegen.headers import _cpp_standard

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
        *defines,
        f"-I{folder}",
        f"-I{EMULATED}",
        f"-I{npu.torch_npu_home / 'include'}",
        f"-I{npu.torch_npu_home / 'include' / 'third_party' / 'acl' / 'inc'}",
        *(f"-I{path}" for path in include_paths()),
        str(source),
        "-o",
        str(library),
        f"-L{npu.libascendcl.parent}",
        "-lascendcl",
        "-pthread",
        f"-Wl,-rpath,{npu.libascendcl.parent}",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    shutil.copyfile(library, folder / "librace2.so")  # a second wrapper library: the same code, loaded apart
    ours = ("NPU_INDUCTOR_COMPAT_LOCK_IMAGE_BUDGET", "NPU_DEVICE_LIMIT")
    clean = {key: value for key, value in os.environ.items() if key not in ours}

    def run(mode: str, *args: str, env: dict[str, str] | None = None) -> Any:
        done = subprocess.run(
            [sys.executable, "-c", RACE_RUN, str(library), str(npu.libascendcl), mode, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            env={**clean, **(env or {})},
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run


@pytest.fixture(scope="module")
def runtime_program(emulated_npu: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """RACE against an ACL without aclgraph capture (the emulated_npu fixture's)."""
    return _program(emulated_npu, tmp_path_factory.mktemp("runtime_program"))


@pytest.fixture(scope="module")
def capture_program(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """RACE against an ACL with aclgraph capture (its under_capture included)."""
    npu = harness.build_emulated_npu(tmp_path_factory, capture=True)
    return _program(npu, tmp_path_factory.mktemp("capture_program"), "-DWITH_CAPTURE")


def test_a_lock_image_is_never_freed_between_its_look_up_and_its_copy(runtime_program: Any) -> None:
    """Two host threads against the emulated ACL, the interleaving forced: the second thread's new image evicts the
    first's. With the copy queued under the images' lock the first thread's locks start at their value and nothing is
    freed under a copy; with the look-up and the copy split, as this package's launch was, the copy is queued from
    freed memory (shown able to fail)."""
    together, split = runtime_program("0"), runtime_program("1")
    assert {key: together[key] for key in ("code", "hazards", "frees")} == {"code": 0, "hazards": [], "frees": 1}
    assert split["frees"] == 1 and split["code"] == 2, split
    assert "aclrtMemcpyAsync queued from a host buffer aclrtFreeHost already freed" in split["hazards"]


def test_two_wrapper_libraries_keep_their_own_state(runtime_program: Any) -> None:
    """Two wrapper libraries (two compiled graphs) built from the same runtime, loaded into one global symbol scope
    with default visibility: each has its own lock-image lock and cache (the runtime's internal linkage; inline
    functions of external linkage would share one through GCC's unique symbols). With both libraries' copies run,
    the second library's eviction frees only its own image (a shared cache would free both): its locks start at 7,
    no hazard, one image freed."""
    found = runtime_program("two")
    first, second = found["addresses"]
    assert first != second, found
    assert found["first"] == 7 and found["hazards"] == [] and found["frees"] == 1, found


def test_lock_images_are_evicted_while_another_thread_captures_in_global_mode(capture_program: Any) -> None:
    """Another host thread captures a stream of the device into an aclgraph in global mode (the emulated ACL then
    refuses pinned allocations, frees and waits in other threads unless they relax their mode, and any device
    synchronisation: shown by the program's own direct calls) while launches need two lock images, the second past the
    budget. The runtime allocates and evicts with its thread's capture mode relaxed, waits for the first image's copy
    by its event rather than synchronising the device, and both lock buffers start at their values."""
    found = capture_program("capture")
    refused = 107030  # ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT (acl/error_codes/rt_error_codes.h)
    assert found["refused"] == [refused, refused], found
    assert found["code"] == 0 and found["hazards"] == [], found
    calls = found["calls"]
    assert calls["aclrtFreeHost"] == 1 and calls["aclrtSynchronizeEvent"] == 1, calls
    assert calls["aclrtSynchronizeDevice"] == 1, calls  # the program's own refused call only
    assert calls["aclmdlRICaptureThreadExchangeMode"] >= 4, calls  # relaxed and given back around each new image


def test_a_launch_given_device_memory_off_acls_alignment_is_flagged(runtime_program: Any) -> None:
    """The emulated ACL's alignment check, shown able to fire: every hazard-free launch in the wrapper tests means
    something only if a pointer 32 bytes into an allocation (ACL starts each on 64 bytes) is caught."""
    found = runtime_program("misaligned")
    assert found["code"] == 0, found
    (hazard,) = found["hazards"]
    assert hazard.startswith("launch of kernel_a is given device memory off a 64-byte boundary (argument at byte 0,")
    assert hazard.endswith(" offset 32)"), hazard


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
