"""The codegen command: the real Inductor pipeline for device "npu" on the simulated NPU (codegen only).

Each scenario runs `python -m npu_inductor_compat codegen` in a fresh interpreter of this nox session's torch, on
the scripts in examples/. The scripts compare their npu results with eager CPU themselves (a mismatch is a script
error, exit 1), so exit 0 also proves the results are right.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.slow


def codegen(tmp_path: Path, *args: str, script: Path | None = None) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script), "--out", str(out), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
    return done, summary


@pytest.fixture(scope="module")
def pointwise(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("pointwise")
    return tmp, *codegen(tmp, script=EXAMPLES / "pointwise_reduction.py")


def test_pointwise_gets_triton_kernels_and_a_python_wrapper_for_npu(pointwise: Any) -> None:
    tmp, done, summary = pointwise
    assert done.returncode == 0, done.stderr[-3000:]
    assert "match eager CPU" in done.stdout
    assert [(g["kind"], g["wrapper"], g["error"]) for g in summary["graphs"]] == [
        ("forward", "python", None),
        ("backward", "python", None),
    ]
    assert summary["backend"] == "triton" and summary["script_error"] is None
    for graph in summary["graphs"]:
        folder = tmp / "out" / f"graph_{graph['index']}"
        wrapper = (folder / "wrapper.py").read_text()
        assert graph["kernels"] and all(name.startswith("triton_") for name in graph["kernels"])
        for name in graph["kernels"]:
            kernel = (folder / "kernels" / f"{name}.py").read_text()
            assert "@triton.jit" in kernel and "device_str='npu'" in kernel
        assert "from torch.npu import _get_current_raw_stream as get_raw_stream" in wrapper
        assert "device='npu'" in wrapper or "device(type='npu'" in wrapper


def test_device_extension_reports_its_build_or_reuse_time(pointwise: Any) -> None:
    _, done, _ = pointwise
    assert "simulated NPU device extension" in done.stderr
    assert " s)" in done.stderr or "done in" in done.stderr


def test_cpp_wrapper_is_generated_for_both_graphs(tmp_path: Path) -> None:
    done, summary = codegen(tmp_path, "--cpp-wrapper", script=EXAMPLES / "pointwise_reduction.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [(g["kind"], g["wrapper"], g["error"]) for g in summary["graphs"]] == [
        ("forward", "cpp", None),
        ("backward", "cpp", None),
    ]
    source = (tmp_path / "out" / "graph_0" / "wrapper.cpp").read_text()
    assert 'Generated for device "npu"' in source and summary["graphs"][0]["kernels"][0] in source
    # buffers are allocated on the npu device (2.15's device_to_aten would answer CUDA's type without our record)
    assert "cached_torch_device_type_privateuse1" in source and "cached_torch_device_type_cuda" not in source


def test_kernel_metadata_reaches_the_npu_launch_and_the_cpp_compiles_against_the_paired_torch_npu_headers(
    tmp_path: Path,
) -> None:
    """Real codegen on the simulated NPU, then g++ -fsyntax-only against torch's headers and those of the torch_npu
    wheel paired with this line (downloaded once into the cache; never imported)."""
    metadata = (
        "workspace_size=32,sync_block_lock_layout=0x100000001,mix_mode=mix,auto_tile_and_bind_subblock=true,"
        "parallel_mode=simt,shared_mem_dynamic_size=4096"
    )
    done, summary = codegen(
        tmp_path,
        "--cpp-wrapper",
        "--check-headers",
        "--kernel-metadata",
        metadata,
        script=EXAMPLES / "flex_attention.py",
    )
    unavailable = (summary or {}).get("header_check", {}).get("error") or ""
    if unavailable.startswith(("downloading", "no torch_npu release")):  # offline, or no torch_npu for this torch
        pytest.skip(f"torch_npu headers unavailable: {unavailable}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert summary["kernel_metadata"]["workspace_size"] == 32
    assert summary["header_check"]["headers"] and all(
        text.startswith(("torch_npu ", "installed torch_npu")) for text in summary["header_check"]["headers"]
    )
    cpp_graphs = [graph for graph in summary["graphs"] if graph["wrapper"] == "cpp"]
    assert cpp_graphs and all(graph["header_check"] == "ok" for graph in cpp_graphs)
    for graph in cpp_graphs:
        source = (tmp_path / "out" / f"graph_{graph['index']}" / "wrapper_source.cpp").read_text()
        launches = source.count("aclrtLaunchKernelWithHostArgs(")
        assert launches >= len(graph["kernels"]) > 0
        assert source.count("npu_inductor_compat_rt::Scratch npu_scratch_(npu_workspace_bytes_, ") == launches
        assert source.count("lock_layout(8ULL, 1ULL, npu_inductor_compat_rt::mul(npu_block_dim_, 2ULL") == launches
        assert source.count("npu_attr_.value.dynUBufSize = 4096U;") == launches
        assert "cuLaunchKernel" not in source and "aclrtMemcpy(" not in source


def test_without_the_launch_fix_a_cpp_wrapper_graph_fails_naming_the_fix(tmp_path: Path) -> None:
    """No NPU C++ wrapper without cpp-wrapper-workspace-locks: each graph's error names the fix (upstream's GPU
    wrapper would emit CUDA driver calls, and Inductor's own failure is a bare assertion)."""
    done, summary = codegen(
        tmp_path,
        "--cpp-wrapper",
        "--without-fix",
        "cpp-wrapper-workspace-locks",
        script=EXAMPLES / "pointwise_reduction.py",
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert summary["fixes"]["cpp-wrapper-workspace-locks"] == "skipped"
    errors = [graph["error"] for graph in summary["graphs"]]
    assert errors and all(
        error
        and error["type"] == "NotImplementedError"
        and "needs fix 'cpp-wrapper-workspace-locks'" in error["message"]
        for error in errors
    ), errors


def test_flex_attention_dynamic_reaches_the_triton_flex_templates(tmp_path: Path) -> None:
    done, summary = codegen(tmp_path, "--dynamic", script=EXAMPLES / "flex_attention.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "match eager CPU" in done.stdout
    kinds = {g["kind"]: g for g in summary["graphs"]}
    assert set(kinds) == {"forward", "backward"}
    assert any(name.startswith("triton_tem_") for name in kinds["forward"]["kernels"])
    assert any(name.startswith("triton_tem_") for name in kinds["backward"]["kernels"])
    assert summary["dynamic"] is True


def test_a_script_that_raises_is_reported_with_exit_1(tmp_path: Path) -> None:
    script = tmp_path / "raises.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            x = torch.ones(4).to("npu")
            print(torch.compile(lambda t: t * 2)(x).cpu())
            raise ValueError("boom from the user script")
            """
        )
    )
    done, summary = codegen(tmp_path, script=script)
    assert done.returncode == 1
    assert summary["script_error"] == {"type": "ValueError", "message": "boom from the user script"}
    assert [g["error"] for g in summary["graphs"]] == [None]  # the graph itself generated
    assert "boom from the user script" in (tmp_path / "out" / "script_error.txt").read_text()
    assert "the script raised ValueError" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["does_not_exist.py"], "SCRIPT 'does_not_exist.py' is not a file"),
        (["{script}", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["{script}", "--without-fix", "no-such-fix"], "--without-fix: unknown id(s) no-such-fix; valid:"),
        (["{script}", "--backend", "cuda"], "unknown NPU backend 'cuda'"),
        (["{script}", "--kernel-metadata", "workspace_size=64"], "--kernel-metadata concerns the C++ wrapper"),
        (["{script}", "--check-headers"], "--check-headers concerns the C++ wrapper: add --cpp-wrapper"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "workspace=1"], "unknown key 'workspace'; valid:"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "lock_num"], "'lock_num' is not KEY=VALUE"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "lock_num=-1"], "'lock_num' = -1 is out of range"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "lock_num=two"], "lock_num='two' is not an integer"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "force_simt_only=1"], "'force_simt_only' must be a bool"),
        (["{script}", "--cpp-wrapper", "--kernel-metadata", "lock_num=1,lock_num=2"], "'lock_num' given twice"),
        ([], "the following arguments are required: script"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process: usage errors are found before the device is set up."""
    from npu_inductor_compat.__main__ import main

    script = str(EXAMPLES / "pointwise_reduction.py")
    with pytest.raises(SystemExit) as caught:
        main(["codegen", *(arg.format(script=script) for arg in args)])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err
