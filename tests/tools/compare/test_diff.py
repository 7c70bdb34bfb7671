"""The codegen diff (`python -m npu_inductor_compat diff DIR_A DIR_B`): graph and kernel matching, launch metadata
versus body, wrappers, noise, and bad input; on output directories written here in codegen's layout, plus one slow
test on two real codegen runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_paths import ROOT

from npu_inductor_compat.tools.simulated.codegen.output import MANIFEST, MANIFEST_TOOL
from npu_inductor_compat.tools.simulated.compare import (
    diff,
    diff_compare,
    diff_graphs,
    diff_input,
    diff_render,
    diff_sources,
)
from npu_inductor_compat.tools.simulated.compare.diff_noise import normalise

SIGNATURE = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
BODY = """\
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask & r0_mask)
    tmp1 = tl_math.cos(tmp0)
    tl.store(out_ptr0 + (xindex), tmp1, xmask)
"""


def kernel(
    name: str,
    signature: dict[str, str] | None = None,
    body: str = BODY,
    backend_hash: str = "C25205569D9D",
    extra_meta: str = "",
    heuristic: str = "pointwise",
) -> str:
    """A Triton kernel module as codegen writes kernels/<name>.py (the shape Inductor generates)."""
    signature = SIGNATURE if signature is None else signature
    args = ", ".join(f"{arg} : tl.constexpr" if kind == "constexpr" else arg for arg, kind in signature.items())
    return f"""
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.{heuristic}(
    size_hints={{'x': 512}},
    filename=__file__,
    triton_meta={{'signature': {signature!r}, 'device': DeviceProperties(type='npu', index=0, multi_processor_count=108, warp_size=32), 'constants': {{}}, 'configs': [{{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}}]}},
    inductor_meta={{'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': '{name}', 'mutated_arg_names': [], 'backend_hash': '{backend_hash}', 'num_load': 1{extra_meta}}},
    min_elem_per_thread=0
)
@triton.jit
def {name}({args}):
{body}"""  # noqa: E501


@dataclass
class Graph:
    kind: str = "forward"
    kernels: dict[str, str] = field(default_factory=dict)  # name -> kernels/<name>.py
    forward: int | None = None
    wrapper: str = "python"
    status: str = "ok"
    dynamic: bool = False
    compile_id: str = "0/0"
    run: str = "tmp0abc12"  # the temporary directory Inductor's cache used: differs between runs
    extra_wrapper: str = ""  # a line in call()
    error: dict[str, str] | None = None
    execution: dict[str, Any] | None = None  # codegen --execute's verdict


def python_wrapper(graph: Graph, index: int) -> str:
    kind = graph.kind
    lines = [
        f"# AOT ID: ['{index}_{kind}']",
        "import torch",
        "from torch._inductor.async_compile import AsyncCompile",
        "async_compile = AsyncCompile()",
        "",
    ]
    for name, source in graph.kernels.items():
        lines += [
            "",
            f"# kernel path: /tmp/torchinductor_root/{graph.run}/ab/c{'k' * 51}.py",
            "# Topologically Sorted Source Nodes: [cos], Original ATen: [aten.cos]",
            "# Graph fragment:",
            "#   %cos : [num_users=1] = call_function[target=torch.ops.aten.cos.default](args = (%arg0_1,))",
            f"{name} = async_compile.triton('{name}', '''{source}''', device_str='npu')",
            "",
        ]
    lines += ["async_compile.wait(globals())", "del async_compile", "", "def call(args):", "    arg0_1, = args"]
    lines += ["    buf0 = empty_strided((264, ), (1, ), device='npu', dtype=torch.float32)"]
    lines += [f"    {name}.run(arg0_1, buf0, 264, stream=stream0)" for name in graph.kernels]
    if graph.extra_wrapper:
        lines.append(f"    {graph.extra_wrapper}")
    lines += ["    return (buf0, )", ""]
    return "\n".join(lines)


def cpp_wrapper(graph: Graph) -> str:
    lines = ["#include <torch/csrc/inductor/cpp_wrapper/common.h>", ""]
    for name in graph.kernels:
        lines += [
            f"static aclrtFuncHandle {name} = nullptr;",
            f"static void call_{name}(const void* in_ptr0, aclrtStream stream_) {{",
            f'    {name} = load_kernel("/tmp/torchinductor_root/{graph.run}/qd/c{"q" * 51}.cubin", "{name}");',
            "}",
        ]
    lines += ["void inductor_entry_impl() {"]
    lines += [f"    call_{name}(buf0, stream0);" for name in graph.kernels]
    if graph.extra_wrapper:
        lines.append(f"    {graph.extra_wrapper}")
    lines += ["}", ""]
    return "\n".join(lines)


def write_output(root: Path, graphs: list[Graph], **summary: Any) -> Path:
    """A codegen output directory in the layout `codegen` writes (summary.json, codegen_manifest.json, graph_<i>)."""
    root.mkdir(parents=True)
    written: list[str] = []

    def write(relative: str, text: str) -> str:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
        written.append(relative)
        return relative

    entries = []
    for index, graph in enumerate(graphs):
        folder = f"graph_{index}"
        files: dict[str, Any] = {"wrapper": None, "wrapper_module": None, "kernels": {}, "error": None}
        if graph.status != "error":
            if graph.wrapper == "cpp":
                cpp = cpp_wrapper(graph)
                files["wrapper"] = write(f"{folder}/wrapper.cpp", cpp)
                module = f"import torch\n\ncpp_wrapper_src = (\nr'''\n{cpp}'''\n)\n\ncall = load(cpp_wrapper_src)\n"
                files["wrapper_module"] = write(f"{folder}/wrapper_module.py", module)
            else:
                files["wrapper"] = write(f"{folder}/wrapper.py", python_wrapper(graph, index))
        for name, source in graph.kernels.items():
            fragment = f"{name} = async_compile.triton('{name}', '''{source}''', device_str='npu')\n"
            files["kernels"][name] = {
                "defined_with": "triton",
                "source": write(f"{folder}/kernels/{name}.py", source),
                "fragment": write(f"{folder}/kernels/{name}.fragment.py", fragment),
            }
        if graph.error is not None:
            files["error"] = write(f"{folder}/error.txt", "Traceback ...\n")
        entries.append(
            {
                "index": index,
                "compile_id": graph.compile_id,
                "kind": graph.kind,
                "forward": graph.forward,
                "device": "npu",
                "status": graph.status,
                "wrapper": graph.wrapper,
                "dynamic": graph.dynamic,
                "recompile_reasons": [],
                "seconds": 0.5 + index,
                "kernels": list(graph.kernels),
                "error": graph.error,
                "files": files,
                **({} if graph.execution is None else {"execution": graph.execution}),
            }
        )
    document = {
        "script": "examples/model.py",
        "argv": [],
        "torch": "2.7.1+cu126",
        "line": "v2_7_1",
        "backend": "triton",
        "soc": "Ascend910B3",
        "cpp_wrapper": any(graph.wrapper == "cpp" for graph in graphs),
        "dynamic": any(graph.dynamic for graph in graphs),
        "dynamic_flag": False,
        "without_fix": [],
        "kernel_metadata": {},
        "fixes": {"flex-backward-symbolic-grid": "applied"},
        "script_error": None,
        **summary,
    }
    document["graphs"] = entries
    written.append("summary.json")
    document["files"] = sorted(written)
    (root / "summary.json").write_text(json.dumps(document, indent=2))
    (root / MANIFEST).write_text(json.dumps({"tool": MANIFEST_TOOL, "version": 1, "files": sorted(written)}))
    return root


def run(a: Path, b: Path, *options: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = diff.diff_main([str(a), str(b), *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def report(a: Path, b: Path) -> dict[str, Any]:
    result: dict[str, Any] = diff_compare.compare(diff_input.load(a), diff_input.load(b)).to_json()
    return result


def forward_and_backward(forward: dict[str, str], backward: dict[str, str], **graph: Any) -> list[Graph]:
    return [Graph("forward", forward, **graph), Graph("backward", backward, forward=0, **graph)]


COS = "triton_poi_fused_cos_0"
SIN_GRAD = "triton_poi_fused_cos_mul_0"


@pytest.mark.once
def test_identical_outputs_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graphs = forward_and_backward({COS: kernel(COS)}, {SIN_GRAD: kernel(SIN_GRAD)})
    a, b = write_output(tmp_path / "a", graphs), write_output(tmp_path / "b", graphs)
    code, out, err = run(a, b, capsys=capsys)
    assert (code, err) == (0, "")
    assert "no differences in the generated code" in out
    assert "forward #0 (graph 0, compile 0/0, on npu, python wrapper): identical (1 kernel(s))" in out
    assert "backward of forward #0 (graph 1" in out


@pytest.mark.once
def test_what_differs_between_two_runs_of_one_script_is_normalised_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by diffing two real runs: the cache's temporary directory (kernel path comments, a C++ wrapper's cubin
    path), the AOT ID counter, the order of &-joined masks (torch 2.7.1 joins them from a set)."""
    swapped = BODY.replace("xmask & r0_mask", "r0_mask & xmask")
    for wrapper in ("python", "cpp"):
        a = write_output(tmp_path / wrapper / "a", [Graph(kernels={COS: kernel(COS)}, wrapper=wrapper)])
        b = write_output(
            tmp_path / wrapper / "b", [Graph(kernels={COS: kernel(COS, body=swapped)}, wrapper=wrapper, run="tmpzz9")]
        )
        text = (b / "graph_0" / ("wrapper.py" if wrapper == "python" else "wrapper.cpp")).read_text()
        (b / "graph_0" / ("wrapper.py" if wrapper == "python" else "wrapper.cpp")).write_text(
            text.replace("# AOT ID: ['0_forward']", "# AOT ID: ['3_forward']")
        )
        assert (a / "graph_0/kernels" / f"{COS}.py").read_text() != (b / "graph_0/kernels" / f"{COS}.py").read_text()
        code, out, _ = run(a, b, capsys=capsys)
        assert code == 0, out


@pytest.mark.once
def test_the_mask_order_is_normalised_only_where_it_cannot_change_the_value() -> None:
    assert normalise("tl.load(p, xmask & r0_mask, other=0.0)") == "tl.load(p, r0_mask & xmask, other=0.0)"
    assert normalise("tmp8 = tl.where(xmask & r0_mask, tmp6, 0)") == "tmp8 = tl.where(r0_mask & xmask, tmp6, 0)"
    for kept in ("x = ~xmask & r0_mask", "y = a + xmask & r0_mask", "f(xmask & r0_mask.to(tl.int1))"):
        assert normalise(kept) == kept


@pytest.mark.once
def test_added_and_removed_kernels_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    red = "triton_red_fused_sum_1"
    scan = "triton_spl_fused_cumsum_2"
    scan_source = kernel(scan, body=BODY.replace("tl_math.cos(tmp0)", "tl.cumsum(tmp0, 0)"))
    red_source = kernel(red, body=BODY.replace("tl_math.cos(tmp0)", "tl.sum(tmp0, 0)"), heuristic="reduction")
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS), scan: scan_source})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS), red: red_source})])
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1
    assert f"  kernel {scan}: removed" in out and f"  kernel {red}: added" in out
    assert "1 kernel(s) identical" in out
    kernels = report(a, b)["graphs"][0]["kernels"]
    assert [(k["a"], k["b"], k["status"]) for k in kernels] == [
        (COS, COS, "same"),
        (scan, None, "removed"),
        (None, red, "added"),
    ]


@pytest.mark.once
def test_a_launch_metadata_change_is_told_apart_from_a_body_change(tmp_path: Path) -> None:
    wider = {**SIGNATURE, "xnumel": "i64"}
    body = BODY.replace("tl_math.cos(tmp0)", "tl_math.cos(tmp0.to(tl.float32))")
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS), SIN_GRAD: kernel(SIN_GRAD)})])
    b = write_output(
        tmp_path / "b",
        [Graph(kernels={COS: kernel(COS, signature=wider), SIN_GRAD: kernel(SIN_GRAD, body=body)})],
    )
    launch_only, body_only = report(a, b)["graphs"][0]["kernels"]
    assert launch_only["status"] == "changed" and launch_only["body"] is None
    assert launch_only["launch"] == [{"key": "triton_meta.signature.xnumel", "a": "i32", "b": "i64"}]
    assert body_only["status"] == "changed" and body_only["launch"] == []
    assert body_only["body"]["added"] == 1 and body_only["body"]["removed"] == 1
    assert "-    tmp1 = tl_math.cos(tmp0)" in body_only["body"]["diff"]
    assert "+    tmp1 = tl_math.cos(tmp0.to(tl.float32))" in body_only["body"]["diff"]


@pytest.mark.once
def test_metadata_is_read_with_ast_key_by_key_and_new_arguments_say_where(tmp_path: Path) -> None:
    dynamic = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "ks0": "i64", "xnumel": "i32", "XBLOCK": "constexpr"}
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS)})])
    b = write_output(
        tmp_path / "b",
        [Graph(kernels={COS: kernel(COS, signature=dynamic, extra_meta=", 'tiling_scores': {'x': 4224}")})],
    )
    (changed,) = report(a, b)["graphs"][0]["kernels"]
    assert changed["launch"] == [
        {
            "key": "triton_meta.signature (arguments)",
            "a": ["in_ptr0", "out_ptr0", "xnumel", "XBLOCK"],
            "b": ["in_ptr0", "out_ptr0", "ks0", "xnumel", "XBLOCK"],
        },
        {"key": "triton_meta.signature.ks0", "b": "i64"},
        {"key": "inductor_meta.tiling_scores", "b": {"x": 4224}},
    ]
    text = diff_render.render(diff_compare.compare(diff_input.load(a), diff_input.load(b)))
    assert "triton_meta.signature (arguments): +ks0 before xnumel" in text
    assert "triton_meta.signature.ks0: (absent) -> 'i64'" in text


@pytest.mark.once
def test_device_properties_and_other_calls_in_the_metadata_are_compared_by_argument(tmp_path: Path) -> None:
    source = kernel(COS)
    newer = source.replace("warp_size=32)", "max_threads_per_block=1024, warp_size=32)")
    newer = newer.replace("'grid_type': 'Grid1D'", "'grid_type': 'Grid2D', 'reduction_hint': ReductionHint.INNER")
    a = write_output(tmp_path / "a", [Graph(kernels={COS: source})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: newer})])
    (changed,) = report(a, b)["graphs"][0]["kernels"]
    assert changed["launch"] == [
        {"key": "triton_meta.device.max_threads_per_block", "b": 1024},
        {"key": "inductor_meta.grid_type", "a": "Grid1D", "b": "Grid2D"},
        {"key": "inductor_meta.reduction_hint", "b": "ReductionHint.INNER"},
    ]
    assert changed["body"] is None


@pytest.mark.once
def test_the_backend_hash_and_the_filename_are_not_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS, backend_hash="C252")})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS, backend_hash="89DA")})])
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 0, out


@pytest.mark.once
def test_a_kernel_torch_names_after_other_fused_ops_is_matched_by_position_and_its_rename_is_not_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2.7.1's triton_poi_fused_cos_mul_0 is 2.12.1's triton_poi_fused_cos_expand_mul_..._0: same kind, same
    number. Only the name differs: reported once, and the wrapper (which calls it by name) is unchanged."""
    renamed = "triton_poi_fused_cos_expand_mul_threshold_backward_unsqueeze_0"
    a = write_output(tmp_path / "a", [Graph(kernels={SIN_GRAD: kernel(SIN_GRAD)})])
    b = write_output(tmp_path / "b", [Graph(kernels={renamed: kernel(renamed)})])
    (kernel_report,) = report(a, b)["graphs"][0]["kernels"]
    assert (kernel_report["a"], kernel_report["b"], kernel_report["status"]) == (SIN_GRAD, renamed, "renamed")
    assert kernel_report["matched_by"] in ("content", "position")
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1
    assert f"kernel {SIN_GRAD} -> {renamed} (renamed; matched by" in out and "otherwise identical" in out
    assert "wrapper.py" not in out  # calls the kernel under its new name: nothing else changed


@pytest.mark.once
def test_kernel_matching_rules_in_order() -> None:
    def pairs(a: list[str], b: list[str], same_content: tuple[str, str] | None = None) -> list[tuple[str, str, str]]:
        return diff_graphs.match_kernels(a, b, lambda side, name: name if same_content is None else "x")

    # an extra kernel defined first renumbers the others: matched by stem, not by position
    assert pairs(
        ["triton_poi_fused_add_0", "triton_red_fused_sum_1"],
        ["triton_poi_fused_mul_0", "triton_poi_fused_add_1", "triton_red_fused_sum_2"],
    ) == [
        ("triton_poi_fused_add_0", "triton_poi_fused_add_1", "numbering"),
        ("triton_red_fused_sum_1", "triton_red_fused_sum_2", "numbering"),
    ]
    # fused ops renamed: same kind and number
    assert pairs(
        ["triton_tem_fused_0", "triton_per_fused_1"],
        ["triton_per_fused_flex_attention_1", "triton_tem_fused_flex_attention_0"],
    ) == [
        ("triton_tem_fused_0", "triton_tem_fused_flex_attention_0", "position"),
        ("triton_per_fused_1", "triton_per_fused_flex_attention_1", "position"),
    ]
    # a persistent reduction that became a looped one: same fused ops and number, another kind
    assert pairs(["triton_per_fused_sum_0"], ["triton_red_fused_sum_0"]) == [
        ("triton_per_fused_sum_0", "triton_red_fused_sum_0", "position")
    ]
    # different kind, ops and number: not a pair
    assert pairs(["triton_per_fused_sum_0"], ["triton_poi_fused_cos_1"]) == []
    # unless the source is the same
    assert pairs(["triton_per_fused_sum_0"], ["triton_poi_fused_cos_1"], same_content=("", "")) == [
        ("triton_per_fused_sum_0", "triton_poi_fused_cos_1", "content")
    ]


@pytest.mark.once
def test_a_graph_only_in_one_output_and_a_backward_matched_through_its_forward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B compiled an extra forward graph before the backward: indices shift and the split changed, so graphs pair by
    their kernels; the backward still pairs with the backward of the first forward."""
    a = write_output(tmp_path / "a", forward_and_backward({COS: kernel(COS)}, {SIN_GRAD: kernel(SIN_GRAD)}))
    b = write_output(
        tmp_path / "b",
        [
            Graph("forward", {COS: kernel(COS)}),
            Graph("forward", {"triton_poi_fused_sin_0": kernel("triton_poi_fused_sin_0")}, compile_id="1/0"),
            Graph("backward", {SIN_GRAD: kernel(SIN_GRAD)}, forward=0),
        ],
    )
    graphs = report(a, b)["graphs"]
    assert [(g["label"], g["a"], g["b"], g["only_in"], g["different"]) for g in graphs] == [
        ("forward #0 (paired by its kernels)", 0, 0, None, False),
        ("backward of forward #0 (paired by its kernels)", 1, 2, None, False),
        ("forward #1", None, 1, "B", True),
    ]
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1
    assert "forward #1: only in B (graph 1, compile 1/0, on npu, python wrapper; triton_poi_fused_sin_0)" in out
    code, out, _ = run(b, a, capsys=capsys)
    assert code == 1 and "forward #1: only in A" in out


@pytest.mark.once
def test_graph_status_and_field_changes_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    error = {"type": "LoweringException", "message": "NotImplementedError: npu\nmore"}
    a = write_output(tmp_path / "a", [Graph(kernels={}, status="error", error=error)])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS)}, dynamic=True)])
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1
    assert "  status: 'error' -> 'ok'" in out
    assert "  dynamic: False -> True" in out
    assert "  error: 'LoweringException: NotImplementedError: npu' -> None" in out
    assert f"  kernel {COS}: added" in out and "  wrapper.py: only in B" in out


def test_a_changed_execute_verdict_is_a_difference_naming_the_kernel_and_one_run_without_it_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernels = {COS: kernel(COS)}
    wrong = {"status": "error", "first_wrong": {"kernel": COS, "status": "error"}}
    a = write_output(tmp_path / "a", [Graph(kernels=kernels, execution={"status": "match"})])
    b = write_output(tmp_path / "b", [Graph(kernels=kernels, execution=wrong)])
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1 and f"  execution: 'match' -> 'error ({COS})'" in out, out
    plain = write_output(tmp_path / "plain", [Graph(kernels=kernels)])  # codegen without --execute
    code, out, _ = run(a, plain, capsys=capsys)
    assert code == 0 and "execution" not in out, out


@pytest.mark.once
def test_wrapper_changes_are_counted_and_shown_with_verbose(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS)})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS)}, extra_wrapper="del arg0_1")])
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1
    assert "  wrapper.py: +1 -0 lines (--verbose shows the diff)" in out and "+    del arg0_1" not in out
    code, out, _ = run(a, b, "--verbose", "--context", "0", capsys=capsys)
    assert "  wrapper.py: +1 -0 lines\n    @@ -15,0 +16 @@\n    +    del arg0_1\n" in out  # no context lines
    # the kernel definitions (and Inductor's comment blocks above them) are collapsed: kernels are compared alone
    collapsed = diff_sources.collapse_wrapper(normalise((a / "graph_0" / "wrapper.py").read_text()))
    assert f"{COS} = async_compile.triton(...)  # compared on its own" in collapsed
    assert "# kernel path" not in collapsed and "tl_math.cos" not in collapsed
    (wrapper,) = report(a, b)["graphs"][0]["wrappers"]
    assert (wrapper["file"], wrapper["added"], wrapper["removed"]) == ("wrapper.py", 1, 0)


@pytest.mark.once
def test_a_cpp_wrapper_and_its_module_are_compared_without_the_cpp_twice(tmp_path: Path) -> None:
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS)}, wrapper="cpp")])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS)}, wrapper="cpp", extra_wrapper="buf0.reset();")])
    wrappers = report(a, b)["graphs"][0]["wrappers"]
    assert [(w["file"], w["added"], w["removed"]) for w in wrappers] == [
        ("wrapper.cpp", 1, 0),
        ("wrapper_module.py", 0, 0),  # the C++ literal inside it is wrapper.cpp: not compared again
    ]
    module = (a / "graph_0" / "wrapper_module.py").read_text()
    assert "'''<the C++: wrapper.cpp>'''" in diff_sources.collapse_wrapper(module)


@pytest.mark.once
def test_body_diffs_are_capped_unless_full(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_a = BODY + "".join(f"    t{i} = {i}\n" for i in range(60))
    long_b = BODY + "".join(f"    t{i} = {i + 1}\n" for i in range(60))
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS, body=long_a)})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS, body=long_b)})])
    _, out, _ = run(a, b, capsys=capsys)
    assert "more diff line(s) (--full shows all)" in out and "+    t59 = 60" not in out
    _, out, _ = run(a, b, "--full", capsys=capsys)
    assert "more diff line(s)" not in out and "+    t59 = 60" in out


@pytest.mark.once
def test_the_header_names_both_sides_and_warns_when_the_runs_differ_in_script_or_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graphs = [Graph(kernels={COS: kernel(COS)})]
    a = write_output(tmp_path / "a", graphs, provider="simulated-npu")  # stock Inductor's old name
    b = write_output(
        tmp_path / "b",
        graphs,
        torch="2.12.1+cu130",
        line="v2_12",
        script="examples/other.py",
        provider="torch_npu-wheel",
        cpp_wrapper=True,
        fixes={"flex-backward-symbolic-grid": "not needed"},
    )
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 0  # the same generated code: the header differences are context, not differences
    a_is = "(line v2_7_1, backend triton, soc Ascend910B3, provider stock); examples/model.py"
    b_is = "(line v2_12, backend triton, soc Ascend910B3, provider torch_npu-wheel); examples/other.py"
    assert f"A: {a}: torch 2.7.1+cu126 {a_is}" in out and f"B: {b}: torch 2.12.1+cu130 {b_is}" in out
    assert "warning: A and B ran different scripts (examples/model.py / examples/other.py)" in out
    differing = "(provider 'stock' / 'torch_npu-wheel'; cpp_wrapper False / True)"
    assert f"warning: A and B ran with different options {differing}" in out
    assert "  flex-backward-symbolic-grid: 'applied' -> 'not needed'" in out


@pytest.mark.once
def test_a_script_error_on_one_side_is_a_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graphs = [Graph(kernels={COS: kernel(COS)})]
    a = write_output(tmp_path / "a", graphs)
    b = write_output(tmp_path / "b", graphs, script_error={"type": "AssertionError", "message": "mismatch"})
    code, out, _ = run(a, b, capsys=capsys)
    assert code == 1 and "the script's own error: None -> 'AssertionError: mismatch'" in out


@pytest.mark.once
def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS)})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS, signature={**SIGNATURE, "xnumel": "i64"})})])
    code, out, _ = run(a, b, "--json", capsys=capsys)
    found = json.loads(out)
    assert code == 1 and found["different"] is True and found["tool"] == "npu-inductor-compat diff"
    assert (found["a"]["torch"], found["a"]["path"]) == ("2.7.1+cu126", str(a))
    assert found["counts"]["kernels_changed"] == 1 and found["counts"]["graphs_different"] == 1
    assert found["graphs"][0]["kernels"][0]["launch"] == [
        {"key": "triton_meta.signature.xnumel", "a": "i32", "b": "i64"}
    ]


@pytest.mark.once
def test_a_kernel_source_that_does_not_parse_is_compared_as_text(tmp_path: Path) -> None:
    a = write_output(tmp_path / "a", [Graph(kernels={COS: kernel(COS)})])
    b = write_output(tmp_path / "b", [Graph(kernels={COS: kernel(COS) + "def broken(:\n"})])
    (changed,) = report(a, b)["graphs"][0]["kernels"]
    assert changed["status"] == "changed" and changed["launch"] == []
    assert "+def broken(:" in changed["body"]["diff"]
    assert changed["note"].startswith("B: not parsed (")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("missing", "{path}: no such directory (expected the --out directory of"),
        ("file", "{path}: not a directory"),
        ("no-manifest", "{path}: not a codegen output: no codegen_manifest.json (written by an older codegen?"),
        ("empty", "{path}: not a codegen output: no summary.json and no codegen_manifest.json"),
        ("foreign", "{path}/codegen_manifest.json: written by 'something else', expected tool"),
        ("version", "{path}/codegen_manifest.json: version 2 is not one this diff reads (1)"),
        ("bad-json", "{path}/summary.json: unreadable summary:"),
        ("no-graphs", "{path}/summary.json: not a codegen output: expected a 'graphs' list"),
        ("bad-graph", "{path}/summary.json: not a codegen output: graphs[0] needs an integer 'index' and a 'kind'"),
        ("list-compile-id", "{path}/summary.json: not a codegen output: graphs[0]: 'compile_id' must be a string"),
        ("unlisted", "{path}: summary.json names 'graph_0/wrapper.py', which codegen_manifest.json does not list"),
    ],
)
@pytest.mark.once
def test_trouble_exits_2_naming_the_path_and_what_is_expected(
    damage: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good", [Graph(kernels={COS: kernel(COS)})])
    bad = tmp_path / "bad"
    if damage == "file":
        bad.write_text("x")
    elif damage == "empty":
        bad.mkdir()
    elif damage != "missing":
        shutil.copytree(good, bad)
        manifest = json.loads((bad / MANIFEST).read_text())
        summary = json.loads((bad / "summary.json").read_text())
        if damage == "no-manifest":
            (bad / MANIFEST).unlink()
        elif damage == "foreign":
            (bad / MANIFEST).write_text(json.dumps({**manifest, "tool": "something else"}))
        elif damage == "version":
            (bad / MANIFEST).write_text(json.dumps({**manifest, "version": 2}))
        elif damage == "bad-json":
            (bad / "summary.json").write_text("{not json")
        elif damage == "no-graphs":
            (bad / "summary.json").write_text(json.dumps({**summary, "graphs": None}))
        elif damage == "bad-graph":
            (bad / "summary.json").write_text(json.dumps({**summary, "graphs": [{"kind": "forward"}]}))
        elif damage == "list-compile-id":  # was a raw TypeError (issue #44)
            graphs = [{**summary["graphs"][0], "compile_id": ["0", "0"]}]
            (bad / "summary.json").write_text(json.dumps({**summary, "graphs": graphs}))
        elif damage == "unlisted":
            manifest["files"].remove("graph_0/wrapper.py")
            (bad / MANIFEST).write_text(json.dumps(manifest))
    for a, b in ((good, bad), (bad, good)):
        code, out, err = run(a, b, capsys=capsys)
        assert code == 2 and out == ""
        assert err.startswith("npu_inductor_compat diff: ") and message.format(path=bad) in err, err


@pytest.mark.once
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["only_one"], ["a", "b", "--context", "-1"], ["a", "b", "--context", "x"], ["a", "b", "--color"]):
        with pytest.raises(SystemExit) as caught:
            diff.diff_main(argv)
        assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "-1 is negative" in err and "'x' is not a number of lines" in err and "unrecognized arguments" in err


@pytest.mark.once
@pytest.mark.subprocess
def test_the_command_is_routed_through_the_package_main(tmp_path: Path) -> None:
    graphs = [Graph(kernels={COS: kernel(COS)})]
    a, b = write_output(tmp_path / "a", graphs), write_output(tmp_path / "b", graphs)
    done = subprocess.run(
        [sys.executable, "-m", "npu_inductor_compat", "diff", str(a), str(b)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no differences in the generated code" in done.stdout


@pytest.mark.once
def test_the_nox_session_that_makes_the_outputs_runs_one_line_and_is_not_in_the_default_run() -> None:
    import ast

    tree = ast.parse((ROOT / "noxfile.py").read_text())
    (session,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "codegen"]
    decorators = [ast.unparse(decorator) for decorator in session.decorator_list]
    assert "nox.parametrize('torch', list(TORCH_LINES))" in decorators, decorators
    source = ast.unparse(session)
    assert "session.error(" in source and "'npu_inductor_compat', 'codegen'" in source
    (default,) = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.sessions"
    ]
    assert "codegen" not in ast.unparse(default.value)


# ---------------------------------------------------------------------------------------------------------------
# The real thing: codegen on this environment's torch line


def codegen(cwd: Path) -> Path:
    """A fresh run, made as the shared ones are (conftest.py shared_codegen)."""
    command = [
        sys.executable,
        "-m",
        "npu_inductor_compat",
        "codegen",
        str(ROOT / "examples" / "pointwise_reduction.py"),
        "--provider",
        "stock",
    ]
    done = subprocess.run(
        [*command, "--out", str(cwd / "out")], capture_output=True, text=True, check=False, timeout=900, cwd=cwd
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return cwd / "out"


@pytest.mark.subprocess
def test_real_codegen_static_versus_dynamic_reports_the_new_size_argument(tmp_path: Path, shared_codegen: Any) -> None:
    """Two real runs on this torch line: the same script static and with --dynamic. Every kernel gains a symbolic
    size argument; a third run, static again, shows no difference at all (the noise is normalised away)."""
    example = ROOT / "examples" / "pointwise_reduction.py"
    static, dynamic = shared_codegen(example).out, shared_codegen(example, "--dynamic").out
    assert static.is_dir() and dynamic.is_dir()
    found = diff_compare.compare(diff_input.load(static), diff_input.load(dynamic)).to_json()
    assert found["different"] is True
    assert any("dynamic_flag False / True" in warning for warning in found["warnings"]), found["warnings"]
    graphs = found["graphs"]
    assert [(graph["label"], graph["only_in"]) for graph in graphs] == [
        ("forward #0", None),
        ("backward of forward #0", None),
    ]
    for graph in graphs:
        assert {"key": "dynamic", "a": False, "b": True} in graph["changes"]
        kernels = [kernel for kernel in graph["kernels"] if kernel["status"] == "changed"]
        assert kernels, graph
        for kernel_report in kernels:
            (arguments,) = [c for c in kernel_report["launch"] if c["key"] == "triton_meta.signature (arguments)"]
            added = set(arguments["b"]) - set(arguments["a"])
            assert any(name.startswith("ks") for name in added), arguments
            assert kernel_report["body"] is not None and kernel_report["body"]["added"] > 0
    again = codegen(tmp_path)
    same = diff_compare.compare(diff_input.load(static), diff_input.load(again))
    assert not same.different, diff_render.render(same, verbose=True)


@pytest.mark.once
def test_a_changed_graph_split_is_said_first_and_graphs_pair_by_their_kernels_not_by_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As Llama on torch 2.7.1 (graph breaks: three frames) against 2.12.1 (one frame): the last frame's graphs of A
    hold the kernels B's only graphs hold. Pairing by position would compare A's first graph with B's; pairing by
    kernels compares the graphs that do the same work, and the report says first that the split changed."""
    relu, mul = "triton_poi_fused_relu_0", "triton_poi_fused_mul_0"
    a = write_output(
        tmp_path / "a",
        [
            Graph("forward", {COS: kernel(COS)}, compile_id="0/0"),
            Graph("forward", {relu: kernel(relu)}, compile_id="1/0"),
            Graph("forward", {mul: kernel(mul)}, compile_id="2/0"),
        ],
    )
    b = write_output(tmp_path / "b", [Graph("forward", {"triton_poi_fused_mul_1": kernel(mul)}, compile_id="0/0")])
    found = report(a, b)
    assert found["split"].startswith(
        "the graph split changed: A has 3 graph(s) from 3 compiled frame(s) (3 forward), B has 1 graph(s) from 1 "
        "compiled frame(s) (1 forward)"
    )
    paired = [(g["label"], g["a"], g["b"], g["only_in"]) for g in found["graphs"]]
    assert paired == [
        ("forward #0", 0, None, "A"),
        ("forward #1", 1, None, "A"),
        ("forward #2 (paired by its kernels)", 2, 0, None),
    ]
    code, out, _ = run(a, b, capsys=capsys)
    lines = out.splitlines()
    assert code == 1 and lines[2].startswith("the graph split changed:"), out  # right after the A/B lines


@pytest.mark.once
def test_with_an_extra_frame_first_compile_ids_shift_and_graphs_pair_by_their_kernels(tmp_path: Path) -> None:
    """B compiled an extra frame first, so Dynamo numbered A's frame 0/0 as 1/0 there: pairing by compile id would
    compare the wrong graphs; the kernels say which graph is which, and the split changed."""
    relu = "triton_poi_fused_relu_0"
    a = write_output(tmp_path / "a", [Graph("forward", {COS: kernel(COS)}, compile_id="0/0")])
    b = write_output(
        tmp_path / "b",
        [
            Graph("forward", {relu: kernel(relu)}, compile_id="0/0"),
            Graph("forward", {COS: kernel(COS, body=BODY + "    # changed\n")}, compile_id="1/0"),
        ],
    )
    found = report(a, b)
    assert [(g["a"], g["b"], g["only_in"]) for g in found["graphs"]] == [(0, 1, None), (None, 0, "B")]
    assert found["split"] is not None


@pytest.mark.once
def test_the_same_split_says_nothing_about_it(tmp_path: Path) -> None:
    graphs = forward_and_backward({COS: kernel(COS)}, {SIN_GRAD: kernel(SIN_GRAD)})
    a, b = write_output(tmp_path / "a", graphs), write_output(tmp_path / "b", graphs)
    assert report(a, b)["split"] is None
