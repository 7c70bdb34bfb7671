"""The codegen command: the real Inductor pipeline for device "npu" on the simulated NPU (codegen only)."""

# Each scenario runs `python -m npu_inductor_compat codegen` in a fresh interpreter of this nox session's torch, on
# the scripts in examples/. The scripts compare their npu results with eager CPU themselves (a mismatch is a script
# error, exit 1), so exit 0 also proves the results are right.

from __future__ import annotations

import ast
import json
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.subprocess


def codegen(tmp_path: Path, *args: str, script: Path | None = None) -> tuple[Any, Any]:
    # these tests are of stock Inductor's codegen, whatever the default on this torch (run_codegen puts the provider
    # before ARGS, so before any `--` SCRIPT ARGS)
    done = run_codegen(str(script), *args, out=tmp_path / "out", cwd=tmp_path)
    return done, done.summary


@pytest.fixture(scope="module")
def pointwise(shared_codegen: Any) -> Any:
    run = shared_codegen(EXAMPLES / "pointwise_reduction.py")  # shared with tests/tools/compare/test_diff.py
    return run.out.parent, run, run.summary


def test_pointwise_gets_triton_kernels_and_a_python_wrapper_for_npu(pointwise: Any) -> None:
    tmp, done, summary = pointwise
    assert done.returncode == 0, done.stderr[-3000:]
    assert "match eager CPU" in done.stdout
    assert [(g["kind"], g["device"], g["status"], g["wrapper"], g["error"]) for g in summary["graphs"]] == [
        ("forward", "npu", "ok", "python", None),
        ("backward", "npu", "ok", "python", None),
    ]
    assert summary["backend"] == "triton" and summary["script_error"] is None
    assert summary["torch_npu_standin"] == {"imported": False, "not_simulated": []}  # this script does not import it
    # --provider stock (conftest.py shared_codegen): stock Inductor, also where the default is torch_npu's codegen
    assert summary["provider"] == "stock" and summary["provider_choice"]["chosen_by"] == "--provider"
    assert "provider: stock (stock Inductor's codegen; --provider stock)" in done.stdout.splitlines()
    assert "stock Inductor generates the kernels" not in done.stderr  # the default's note: not for --provider
    for graph in summary["graphs"]:
        folder = tmp / "out" / f"graph_{graph['index']}"
        assert graph["files"]["wrapper"] == f"graph_{graph['index']}/wrapper.py"
        wrapper = (folder / "wrapper.py").read_text()
        assert graph["kernels"] and all(name.startswith("triton_") for name in graph["kernels"])
        for name in graph["kernels"]:
            fragment = (folder / "kernels" / f"{name}.fragment.py").read_text()
            assert "async_compile.triton(" in fragment and "device_str='npu'" in fragment
            source = (folder / "kernels" / f"{name}.py").read_text()
            # runnable Triton source: a module (not a fragment) defining the jitted kernel under its own name
            tree = ast.parse(source)
            (kernel,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
            assert any("triton.jit" in ast.unparse(decorator) for decorator in kernel.decorator_list)
            assert "async_compile" not in source
            assert graph["files"]["kernels"][name] == {
                "defined_with": "triton",
                "source": f"graph_{graph['index']}/kernels/{name}.py",
                "fragment": f"graph_{graph['index']}/kernels/{name}.fragment.py",
            }
        assert "from torch.npu import _get_current_raw_stream as get_raw_stream" in wrapper
        assert "device='npu'" in wrapper or "device(type='npu'" in wrapper


def test_the_summary_links_each_backward_to_its_forward_and_indexes_every_file(pointwise: Any) -> None:
    tmp, _, summary = pointwise
    forward, backward = summary["graphs"]
    assert forward["compile_id"] and backward["compile_id"] == forward["compile_id"]
    assert (forward["forward"], backward["forward"]) == (None, forward["index"])
    assert forward["dynamic"] is False and summary["dynamic"] is False
    manifest = json.loads((tmp / "out" / "codegen_manifest.json").read_text())
    assert manifest["files"] == summary["files"]
    written = {str(path.relative_to(tmp / "out")) for path in (tmp / "out").rglob("*") if path.is_file()}
    assert written == {*summary["files"], "codegen_manifest.json"}
    # every Triton kernel went through the static check, and Inductor's pass it
    kernels = sum(
        entry["defined_with"] == "triton" for graph in summary["graphs"] for entry in graph["files"]["kernels"].values()
    )
    assert summary["static_check"] == {"kernels": kernels, "failures": []} and kernels > 0


def test_progress_lines_name_each_graph_on_stderr(pointwise: Any) -> None:
    _, done, summary = pointwise
    forward, backward = summary["graphs"]
    assert f"graph 0: forward on npu: python wrapper, {len(forward['kernels'])} kernel" in done.stderr
    assert f"graph 1: backward of graph 0 on npu: python wrapper, {len(backward['kernels'])} kernel" in done.stderr


def test_device_extension_reports_its_build_or_reuse_time(pointwise: Any) -> None:
    _, done, _ = pointwise
    assert re.search(r"(reusing|built) the simulated NPU device extension for torch \S+ (\(|in )\d+\.\d s", done.stderr)


def test_cpp_wrapper_is_generated_for_both_graphs(tmp_path: Path) -> None:
    done, summary = codegen(tmp_path, "--cpp-wrapper", script=EXAMPLES / "pointwise_reduction.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [(g["kind"], g["wrapper"], g["error"]) for g in summary["graphs"]] == [
        ("forward", "cpp", None),
        ("backward", "cpp", None),
    ]
    source = (tmp_path / "out" / "graph_0" / "wrapper.cpp").read_text()
    assert 'Generated for device "npu"' in source and summary["graphs"][0]["kernels"][0] in source
    # plain C++, and the Python module Inductor wraps it in beside it
    assert source.lstrip().startswith(("#include", "//")) and "cpp_wrapper_src" not in source
    assert "cpp_wrapper_src" in (tmp_path / "out" / "graph_0" / "wrapper_module.py").read_text()
    # buffers are allocated on the npu device (2.15's device_to_aten would answer CUDA's type without our record)
    assert "cached_torch_device_type_privateuse1" in source and "cached_torch_device_type_cuda" not in source


def test_kernel_metadata_reaches_the_npu_launch_and_the_cpp_compiles_against_the_paired_torch_npu_headers(
    tmp_path: Path,
) -> None:
    """Real codegen on the simulated NPU, then g++ -fsyntax-only against torch's headers and those of the torch_npu
    wheel paired with this line (downloaded once into the cache; never imported)."""
    metadata = (
        "workspace_size=32,sync_block_lock_layout=0x100000001,mix_mode=mix,auto_tile_and_bind_subblock=true,"
        "parallel_mode=simt,compile_on_910_95=true,shared_mem_dynamic_size=4096"
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
        source = (tmp_path / "out" / f"graph_{graph['index']}" / "wrapper.cpp").read_text()
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


def test_a_script_that_fails_at_import_says_so_last_not_that_nothing_was_compiled(tmp_path: Path) -> None:
    """Before anything compiled, the import error is the reason: the last line names it, and does not ask whether
    the script calls torch.compile."""
    script = tmp_path / "imports.py"
    script.write_text("import torch\nimport a_module_nobody_installed  # noqa\n")
    done, summary = codegen(tmp_path, script=script)
    assert done.returncode == 1 and summary["graphs"] == []
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "npu_inductor_compat codegen: the script failed before compiling any graph (at import: No module named "
        "'a_module_nobody_installed')"
    ), done.stderr
    assert "does the script call torch.compile" not in done.stderr


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
        (["{script}", "--provider", "torch_npu"], "argument --provider: 'torch_npu' is not a provider; valid: stock"),
        (["{script}", "--provider", "simulated-npu"], "'simulated-npu' is now called 'stock'; valid: stock (stock"),
        (["{script}", "--soc", "Ascend999"], "--soc: "),
        (["{script}", "--stage-limit", "5"], "--stage-limit concerns the kernel check: add --check-kernels"),
        (["{script}", "--check-kernels", "--check-budget", "0"], "'0' must be a positive number of seconds"),
        (["{script}", "--check-kernels", "--stage-limit", "soon"], "'soon' is not a number of seconds"),
        (["{script}", "-j", "2"], "--jobs concerns the kernel check: add --check-kernels"),
        (["{script}", "--no-cache"], "--no-cache concerns the kernel check: add --check-kernels"),
        (["{script}", "--check-kernels", "-j", "0"], "argument -j/--jobs: '0' must be 1 or more"),
        (["{script}", "--check-kernels", "--max-configs", "two"], "'two' is not a whole number"),
        (
            ["{script}", "--max-configs", "2"],
            "--max-configs concerns the kernel check and --execute: add --check-kernels or --execute",
        ),
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


ASCEND_STYLE = """
import sys

import torch
import torch_npu  # left in, as every Ascend script has it

assert torch.npu.is_available() and torch.npu.device_count() >= 1
torch.npu.set_device(0)
torch.npu.manual_seed(int(sys.argv[sys.argv.index("--seed") + 1]))
print("argv:", sys.argv[1:])


def scale(x):
    return (x * 2).sum(-1)


dynamic = torch.compile(lambda x: torch.relu(x) + 1, dynamic=True)  # dynamic by the script, not by --dynamic
static = torch.compile(scale)
for rows in (4, 6):
    dynamic(torch.randn(rows, 8).to("npu"))
    static(torch.randn(rows, 8).to("npu"))  # the second size recompiles the frame (static shapes)
torch.compile(lambda x: x.cos())(torch.randn(3))  # a CPU graph: shown, but it is not npu
torch.npu.synchronize()
"""


@pytest.fixture(scope="module")
def ascend_style(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("ascend_style")
    script = tmp / "ascend_style.py"
    script.write_text(ASCEND_STYLE)
    return (tmp, *codegen(tmp, "--", "--seed", "7", "--epochs", "1", script=script))


def test_arguments_after_a_double_dash_reach_the_script(ascend_style: Any) -> None:
    _, done, summary = ascend_style
    assert done.returncode == 0, done.stderr[-3000:]
    assert "argv: ['--seed', '7', '--epochs', '1']" in done.stdout
    assert summary["argv"] == ["--seed", "7", "--epochs", "1"]


def test_dynamic_is_read_from_the_graphs_and_recompiles_say_why(ascend_style: Any) -> None:
    _, _, summary = ascend_style
    npu = [graph for graph in summary["graphs"] if graph["device"] == "npu"]
    assert summary["dynamic_flag"] is False and summary["dynamic"] is True
    assert any(graph["dynamic"] for graph in npu)
    recompiled = [graph for graph in npu if graph["recompile_reasons"]]
    assert recompiled, [graph["compile_id"] for graph in npu]
    assert any("size" in reason for graph in recompiled for reason in graph["recompile_reasons"])
    compile_ids = [graph["compile_id"] for graph in summary["graphs"]]
    assert len(set(compile_ids)) == len(compile_ids) and None not in compile_ids


def test_a_graph_without_npu_tensors_is_listed_as_not_npu(ascend_style: Any) -> None:
    _, done, summary = ascend_style
    (cpu,) = [graph for graph in summary["graphs"] if graph["device"] != "npu"]
    assert (cpu["device"], cpu["status"], cpu["error"]) == ("cpu", "not npu", None)
    assert "on cpu: not npu" in done.stderr
    assert summary["torch_npu_standin"]["imported"] is True


def test_a_script_whose_graphs_never_touch_npu_exits_1(tmp_path: Path) -> None:
    script = tmp_path / "cpu_only.py"
    # views only: Inductor compiles the graph for cpu without building a C++ kernel (seconds, not half a minute)
    script.write_text("import torch\nprint(torch.compile(lambda x: x.view(2, 2).t())(torch.ones(4)))\n")
    done, summary = codegen(tmp_path, script=script)
    assert done.returncode == 1, done.stderr[-3000:]
    assert [(graph["device"], graph["status"]) for graph in summary["graphs"]] == [("cpu", "not npu")]
    assert "nothing ran on npu: 1 graph(s) compiled, on cpu" in done.stderr


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: its examples are the v2_7_1 line's flex records
def test_without_fix_of_a_fix_this_torch_does_not_need_says_so_in_one_line(tmp_path: Path) -> None:
    import npu_inductor_compat

    needed_elsewhere = {"v2_7_1": "flex-decoding-split-from-device"}
    fix_id = needed_elsewhere.get(npu_inductor_compat.torch_line(), "flex-backward-symbolic-grid")
    script = tmp_path / "tiny.py"
    script.write_text("import torch\ntorch.compile(lambda x: x + 1)(torch.ones(4).to('npu'))\n")
    # and a record for torch_npu's own code, which the stock provider does not load
    torch_npu_fix = "torch-npu-masked-load-size-symbols"
    done, _ = codegen(tmp_path, "--without-fix", fix_id, torch_npu_fix, script=script)
    assert done.returncode == 0, done.stderr[-3000:]
    for disabled in (fix_id, torch_npu_fix):
        notes = [line for line in done.stderr.splitlines() if line.startswith(f"--without-fix {disabled}: ")]
        assert len(notes) == 1 and "disabling it changes nothing here" in notes[0], done.stderr
    assert "nothing to patch (torch_npu's code is not here" in done.stderr


TWO_GRAPHS = (
    "import torch\nx = torch.ones(4, requires_grad=True).to('npu')\ntorch.compile(torch.sin)(x).sum().backward()\n"
)
ONE_GRAPH = "import torch\ntorch.compile(torch.cos)(torch.ones(4).to('npu'))\n"


def test_a_rerun_replaces_only_what_codegen_wrote_and_keeps_the_users_files(tmp_path: Path) -> None:
    script = tmp_path / "graphs.py"
    script.write_text(TWO_GRAPHS)
    done, first = codegen(tmp_path, "--quiet", script=script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "" and "graph 0:" not in done.stderr  # --quiet: no table, no progress
    out = tmp_path / "out"
    assert len(first["graphs"]) == 2 and (out / "graph_1").is_dir()
    (out / "results.csv").write_text("mine\n")
    (out / "graph_1" / "notes.txt").write_text("mine too\n")
    script.write_text(ONE_GRAPH)
    done, second = codegen(tmp_path, script=script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(second["graphs"]) == 1
    assert (out / "results.csv").read_text() == "mine\n"
    assert sorted(path.name for path in (out / "graph_1").rglob("*")) == ["notes.txt"]  # ours gone, theirs kept
    assert all(not (out / name).exists() for name in set(first["files"]) - set(second["files"]))
    assert all((out / name).is_file() for name in second["files"])


def test_a_foreign_directory_is_refused_before_the_script_runs_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from npu_inductor_compat.__main__ import main

    script = tmp_path / "marker.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "results.csv").write_text("precious\n")
    with pytest.raises(SystemExit) as caught:
        main(["codegen", str(script), "--out", str(out)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"--out {out}: it is not empty and has no codegen_manifest.json" in err and "--force" in err
    assert not (tmp_path / "ran").exists() and (out / "results.csv").read_text() == "precious\n"


@pytest.mark.parametrize("where", ["file", "unwritable", "foreign-manifest"])
def test_a_bad_out_is_a_usage_error_naming_it(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from npu_inductor_compat.__main__ import main

    out = tmp_path / "out"
    expected = {
        "file": "exists and is not a directory",
        "unwritable": "cannot write there",
        "foreign-manifest": "its codegen_manifest.json is not one this command writes",
    }[where]
    if where == "file":
        out.write_text("x")
    elif where == "unwritable":
        if os.geteuid() == 0:
            out = Path("/proc/npu_codegen_out")  # even root cannot create a directory in /proc
        else:
            tmp_path.chmod(0o500)
    else:
        out.mkdir()
        (out / "codegen_manifest.json").write_text('{"tool": "something else", "files": []}')
    try:
        with pytest.raises(SystemExit) as caught:
            main(["codegen", str(EXAMPLES / "pointwise_reduction.py"), "--out", str(out)])
    finally:
        tmp_path.chmod(0o700)
    assert caught.value.code == 2
    assert f"--out {out}: {expected}" in capsys.readouterr().err


def test_force_writes_beside_the_users_files_and_a_script_that_changes_directory_cannot_redirect_the_output(
    tmp_path: Path,
) -> None:
    """--force into a foreign directory keeps its files; a relative --out means the directory codegen was started
    in, even when the script chdirs to a place with files of the same names (they are not touched)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("precious\n")
    decoy = tmp_path / "elsewhere" / "out"
    decoy.mkdir(parents=True)
    (decoy / "summary.json").write_text("the user's own summary\n")
    script = tmp_path / "chdir.py"
    script.write_text(f"import os, torch\nos.chdir({str(tmp_path / 'elsewhere')!r})\n{ONE_GRAPH}")
    done = run_codegen(script, "--out", "out", "--force", out=None, cwd=tmp_path)  # --out relative to the cwd
    assert done.returncode == 0, done.stderr[-3000:]
    assert (decoy / "summary.json").read_text() == "the user's own summary\n"
    assert (out / "results.csv").read_text() == "precious\n"
    summary = json.loads((out / "summary.json").read_text())
    assert "results.csv" not in summary["files"] and len(summary["graphs"]) == 1


def test_a_graph_error_without_a_message_is_shown_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    """A bare `assert` in Inductor fails with an empty message: the progress line and the table still print."""
    from npu_inductor_compat.tools.simulated.codegen.capture import GraphRecord
    from npu_inductor_compat.tools.simulated.codegen.codegen_report import Progress
    from npu_inductor_compat.tools.simulated.codegen.codegen_report import table as _table

    record = GraphRecord(index=0, kind="forward", wrapper="python", devices=("npu",))
    record.error = {"type": "AssertionError", "message": "", "traceback": ""}
    Progress(quiet=False).graph(record)
    assert "graph 0: forward on npu: FAILED: AssertionError: (no message)" in capsys.readouterr().err
    table = _table({"graphs": [{**record.summary(), "files": {}}]})
    assert table.splitlines()[1].endswith("AssertionError: (no message)")


def test_the_default_provider_on_a_torch_without_a_torch_npu_pair_is_stock_said_in_one_line(tmp_path: Path) -> None:
    """No --provider on a torch no torch_npu release runs on: stock Inductor, one line naming the torch to install,
    the summary saying the default chose. (On a paired torch the default runs torch_npu's codegen: tests/
    test_torch_npu_wheel.py's codegen test runs it without --provider.)"""
    import torch

    from npu_inductor_compat.tools.simulated.codegen import provider_choice

    expected = provider_choice.choose(torch.__version__, None)
    if expected.note is None:
        pytest.skip(f"torch {torch.__version__}: the default is {expected.provider} (test_torch_npu_wheel.py)")
    script = tmp_path / "tiny.py"
    script.write_text("import torch\ntorch.compile(lambda x: x + 1)(torch.ones(4).to('npu'))\n")
    done = run_codegen(script, out=tmp_path / "out", provider=None)  # no --provider: the default
    assert done.returncode == 0, done.stderr[-3000:]
    summary = done.summary
    assert summary["provider"] == "stock" and summary["provider_choice"]["chosen_by"] == "default"
    notes = [line for line in done.stderr.splitlines() if "stock Inductor generates the kernels" in line]
    assert notes == [expected.note] and "for torch_npu's own codegen install torch==" in notes[0]
    assert f"provider: {expected.describe()}" in done.stdout.splitlines()


def test_the_wheel_provider_on_a_line_without_a_stubbed_release_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import torch

    from npu_inductor_compat.__main__ import main
    from npu_inductor_compat.tools.simulated.wheel import wheel_release

    try:
        release = wheel_release.paired_release(torch.__version__)
    except wheel_release.WheelUnavailable as err:
        reason = str(err)
    else:
        pytest.skip(f"torch {torch.__version__} has a stubbed torch_npu release ({release})")
    with pytest.raises(SystemExit) as caught:
        main(["codegen", str(EXAMPLES / "pointwise_reduction.py"), "--provider", "torch_npu-wheel"])
    assert caught.value.code == 2
    assert f"--provider torch_npu-wheel: {reason}" in capsys.readouterr().err
