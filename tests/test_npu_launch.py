"""The NPU kernel launch (fixes cpp-wrapper-workspace-locks and autotuner-kernel-metadata) on this session's torch.

There is no NPU here, so this tests one level below it. One fresh interpreter runs real Inductor codegen with
cpp_wrapper=True on the simulated NPU for ``sin(x) + 1`` once per metadata scenario (the simulated compiler metadata
goes through upstream's save_gpu_kernel and the autotuner fix, like real metadata). Then:
- the launch block is compared with a golden file shared by every torch line (tests/golden/npu_launch/);
- the generated call function and the generated runtime prelude are compiled against an emulated ACL runtime
  (tests/emulated_acl) and run 100 times back to back: allocation sizes, lock contents before each launch, pointer
  positions in the argument struct, no blocking copies and no hazards; then every ACL call is made to fail in turn.
Set NPU_INDUCTOR_COMPAT_UPDATE_GOLDENS=1 to rewrite the goldens (and review the diff).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.common.npu_launch import RUNTIME_BEGIN, RUNTIME_END

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "npu_launch"
EMULATED_ACL = HERE / "emulated_acl"
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
    "force_simt_only": {"workspace_size": 64, "lock_num": 2, "force_simt_only": True},
}

GENERATE = """
import json, sys, torch
import torch._inductor.config as inductor_config
from npu_inductor_compat.activation import activate
from npu_inductor_compat.common import providers
from npu_inductor_compat.common.simulated import device
from npu_inductor_compat.common.simulated.capture import capturing
from npu_inductor_compat.common.simulated.headers import cpp_source
from npu_inductor_compat.common.simulated.kernel_params import simulated_metadata

device.setup()
providers.set_provider(device.PROVIDER)
activate()
x = torch.randn(XNUMEL).to("npu")
out = {}
for name, metadata in json.loads(sys.argv[1]).items():
    torch._dynamo.reset()
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
    """The generated argument declarations and launch of KERNEL's call function."""
    body = cpp[cpp.index(f"void call_{KERNEL}(") :]
    start = body.index("void* var_")
    end = body.index("\n", body.index("aclrtLaunchKernelWithHostArgs"))
    start = body.rindex("\n", 0, start) + 1
    return textwrap.dedent(body[start:end]) + "\n"


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_launch_block_matches_the_golden_shared_by_every_torch_line(generated: dict[str, str], scenario: str) -> None:
    block = launch_block(generated[scenario])
    golden = GOLDEN / f"{scenario}.cpp"
    if os.environ.get("NPU_INDUCTOR_COMPAT_UPDATE_GOLDENS") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(block)
    assert block == golden.read_text(), f"launch block for {scenario} differs from {golden}"


# ---------------------------------------------------------------------------------------- emulated ACL runtime
def _harness(cpp: str, tmp: Path) -> Path:
    """A program: the generated runtime prelude and KERNEL's call function, the emulated ACL, and a main that
    launches LAUNCHES times on one stream and prints the emulator's record."""
    runtime = cpp[cpp.index(RUNTIME_BEGIN) : cpp.index(RUNTIME_END) + len(RUNTIME_END)]
    begin = cpp.index(f"static aclrtFuncHandle {KERNEL} = nullptr;")
    function = cpp[begin : cpp.index("\n}\n", begin) + 3]
    parameters = re.search(rf"void call_{KERNEL}\((.*?)\n\)\{{", function, re.DOTALL)
    assert parameters is not None, function[:2000]
    arguments = []
    for parameter in parameters.group(1).split(",\n"):
        declaration = parameter.strip().rstrip(",")
        name = declaration.split("=")[0].split()[-1].lstrip("&")
        if declaration.startswith("const ") and declaration.split()[1].endswith("_type_&"):
            arguments.append(f'FakeTensor{{emulated_acl::device_buffer(4 * {XNUMEL}, "tensor")}}')
        elif name == "xnumel":
            arguments.append(str(XNUMEL))
        elif name == "device_idx_":
            arguments.append("0")
        elif name == "stream_":
            arguments.append("emulated_acl::stream()")
        elif name == "cubin_dir_":
            arguments.append("std::string(argv[1])")
        else:
            raise AssertionError(f"harness does not know parameter {declaration!r}")
    source = tmp / "harness.cpp"
    source.write_text(
        "\n".join(
            [
                runtime,
                '#include "emulated_scratch.h"',
                "struct FakeTensor { void* ptr; void* data_ptr() const { return ptr; } };",
                function,
                "int main(int argc, char** argv) {",
                "  try {",
                f"    for (int launch = 0; launch < {LAUNCHES}; ++launch) call_{KERNEL}({', '.join(arguments)});",
                '    npu_inductor_compat_rt::check(aclrtSynchronizeStream(emulated_acl::stream()), "harness", '
                '"aclrtSynchronizeStream");',
                "  } catch (const std::exception& failure) {",
                "    emulated_acl::error(failure.what());",
                "  }",
                "  emulated_acl::report();",
                "  return 0;",
                "}",
            ]
        )
    )
    binary = tmp / "harness"
    compile_ = ["g++", "-std=c++17", "-O0", f"-I{EMULATED_ACL}", str(source), str(EMULATED_ACL / "emulated_acl.cpp")]
    done = subprocess.run([*compile_, "-o", str(binary)], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    kernel_binary = re.search(r'load_kernel\("([^"]+)"', function)
    assert kernel_binary is not None
    (tmp / Path(kernel_binary.group(1)).name).write_bytes(b"simulated kernel binary")
    return binary


def _run(binary: Path, fail: str | None = None) -> dict[str, Any]:
    env = {**os.environ, "EMULATED_ACL_FAIL": fail or ""}
    done = subprocess.run([str(binary), str(binary.parent)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def emulated(generated: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    if shutil.which("g++") is None:
        pytest.fail("g++ is needed to build the emulated-ACL harness")
    runs = {}
    for scenario, cpp in generated.items():
        binary = _harness(cpp, tmp_path_factory.mktemp(scenario))
        runs[scenario] = (binary, _run(binary))
    return runs


BLOCKS = 2
# The layout of the argument struct: [sync_block_lock, workspace_addr,] in_ptr0, out_ptr0, xnumel, grid_0..2
WITH_POINTERS = {"args_size": 8 + 8 + 8 + 8 + 4 + 12, "locks": 0, "workspace": 8, "tensors": (16, 24)}
SIMT = {"args_size": 8 + 8 + 4 + 12, "tensors": (0, 8)}


def expected(scenario: str) -> dict[str, Any]:
    """What each scenario's launches must allocate and see (computed here from DESIGN.md §2b, not from the code)."""
    meta = SCENARIOS[scenario]
    if meta.get("force_simt_only"):
        return {"workspace": None, "locks": None}
    workspace = meta.get("workspace_size", 0) * BLOCKS or None
    layout = meta.get("sync_block_lock_layout", 0)
    init = meta.get("lock_init_val", meta.get("lock_init_value", 0))
    if layout:
        ordered, unordered = layout & 0xFFFFFFFF, layout >> 32
        participants = BLOCKS * (2 if meta.get("mix_mode") == "mix" and meta.get("auto_tile_and_bind_subblock") else 1)
        one_unordered = [participants] + [0] * ((1 + 2 * participants) * 8 - 1)
        locks = [init] * (ordered * 8) + one_unordered * unordered
    else:
        locks = [init] * meta.get("lock_num", 0)
    return {"workspace": workspace, "locks": locks or None}


def _pointer(args: bytes, offset: int) -> int:
    return int.from_bytes(args[offset : offset + 8], "little")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_emulated_launches_allocate_initialise_and_pass_what_the_kernel_needs(
    emulated: dict[str, tuple[Path, Any]], scenario: str
) -> None:
    _, record = emulated[scenario]
    want = expected(scenario)
    assert record["error"] is None
    assert record["blocking_copies"] == 0 and record["hazards"] == []
    assert record["calls"].get("aclrtMemcpy", 0) == 0
    assert len(record["launches"]) == LAUNCHES
    assert record["loads"] == [{"bytes": len(b"simulated kernel binary"), "magic": 0x43554245}]  # loaded once

    sizes = [allocation["size"] for allocation in record["allocations"]]
    labels = [allocation["label"] for allocation in record["allocations"]]
    per_launch = [size for size in (want["workspace"], want["locks"] and 8 * len(want["locks"])) if size]
    assert sizes == per_launch * LAUNCHES
    assert (
        labels
        == [label for label, size in (("workspace", want["workspace"]), ("sync-block locks", want["locks"])) if size]
        * LAUNCHES
    )

    layout = SIMT if SCENARIOS[scenario].get("force_simt_only") else WITH_POINTERS
    lock_blocks = set()
    for launch in record["launches"]:
        args = bytes.fromhex(launch["args"])
        assert launch["blocks"] == BLOCKS and len(args) == layout["args_size"]
        assert [int.from_bytes(args[-12:][i : i + 4], "little") for i in (0, 4, 8)] == [BLOCKS, 1, 1]
        by_offset = {pointer["offset"]: pointer["label"] for pointer in launch["pointers"]}
        assert all(by_offset.get(offset) == "tensor" for offset in layout["tensors"])
        if layout is WITH_POINTERS:
            assert by_offset.get(0) == ("sync-block locks" if want["locks"] else None)
            assert by_offset.get(8) == ("workspace" if want["workspace"] else None)
            if not want["locks"]:
                assert _pointer(args, 0) == 0
            if not want["workspace"]:
                assert _pointer(args, 8) == 0
            if want["locks"]:
                lock_blocks.add(_pointer(args, 0))
        else:
            assert set(by_offset) == set(layout["tensors"])
        # the kernel dirtied the (recycled) lock block after every launch: each launch still sees a fresh image
        assert launch["locks_before"] == want["locks"]
    if want["locks"]:
        assert len(lock_blocks) == 1, "the allocator should have recycled one lock block"
        uniform = len(set(want["locks"])) == 1 and want["locks"][0] in (0, -1)
        assert record["calls"].get("aclrtMemsetAsync", 0) == (LAUNCHES if uniform else 0)
        assert record["calls"].get("aclrtMemcpyAsync", 0) == (0 if uniform else LAUNCHES)
        assert record["calls"].get("aclrtMallocHost", 0) == (0 if uniform else 1)  # one persistent image


ACL_CALLS = (
    "aclrtBinaryLoadFromData",
    "aclrtBinaryGetFunction",
    "aclrtMemsetAsync",
    "aclrtMemcpyAsync",
    "aclrtMallocHost",
    "aclrtLaunchKernelWithHostArgs",
)


@pytest.mark.parametrize("scenario", ["neither", "locks_lock_num", "locks_packed_mix", "both"])
def test_every_failing_acl_call_stops_the_launch_with_an_error_naming_kernel_and_call(
    emulated: dict[str, tuple[Path, Any]], scenario: str
) -> None:
    binary, record = emulated[scenario]
    used = [call for call in ACL_CALLS if record["calls"].get(call)]
    assert "aclrtLaunchKernelWithHostArgs" in used and len(used) >= 3
    for call in used:
        failed = _run(binary, fail=call)
        assert failed["error"] is not None, call
        assert KERNEL in failed["error"] and call in failed["error"], failed["error"]
        assert "507899" in failed["error"]  # the ACL error code is reported
        assert failed["calls"][call] == 1  # nothing was retried or launched after the failure
        if call != "aclrtLaunchKernelWithHostArgs":
            assert failed["calls"].get("aclrtLaunchKernelWithHostArgs", 0) == 0


def test_the_emulator_flags_a_blocking_copy_into_a_block_queued_work_still_uses(tmp_path: Path) -> None:
    """The hazard the fix avoids, written the blocking way: the emulator must see it (else the zero above is empty)."""
    source = tmp_path / "blocking.cpp"
    source.write_text(
        textwrap.dedent(
            """
            #include "acl/acl.h"
            #include "emulated_scratch.h"
            #include <vector>
            int main() {
              for (int launch = 0; launch < 2; ++launch) {
                npu_inductor_compat_rt::Scratch locks(24, emulated_acl::stream(), "k", "sync-block locks");
                std::vector<int64_t> image(3, 0);
                aclrtMemcpy(locks.ptr, 24, image.data(), 24, ACL_MEMCPY_HOST_TO_DEVICE);
                void* args[1] = {locks.ptr};
                aclrtFuncHandle kernel = &args;
                aclrtStream stream = emulated_acl::stream();
                aclrtLaunchKernelWithHostArgs(kernel, 1, stream, nullptr, args, sizeof(args), nullptr, 0);
              }
              aclrtSynchronizeStream(emulated_acl::stream());
              emulated_acl::report();
            }
            """
        )
    )
    binary = tmp_path / "blocking"
    command = ["g++", "-std=c++17", f"-I{EMULATED_ACL}", str(source), str(EMULATED_ACL / "emulated_acl.cpp")]
    done = subprocess.run([*command, "-o", str(binary)], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout)
    assert record["blocking_copies"] == 2
    assert record["hazards"] == [
        "blocking aclrtMemcpy into sync-block locks while queued stream work (launch) still uses it"
    ]


def test_the_header_check_fails_on_a_name_the_headers_do_not_declare(tmp_path: Path) -> None:
    """The check must be able to fail: an ACL call the paired torch_npu headers do not declare is an error."""
    from npu_inductor_compat.common.simulated import headers

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
    from npu_inductor_compat.common.simulated.headers import cpp_source

    for quote in ("'''", '"""'):
        assert cpp_source(f"x = 1\ncpp_wrapper_src = (\nr{quote}\nint main() {{}}\n{quote}\n)\n") == "int main() {}"
    with pytest.raises(ValueError, match="not a C\\+\\+ wrapper"):
        cpp_source("def call(args):\n    pass\n")
