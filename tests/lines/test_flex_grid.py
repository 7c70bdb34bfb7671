"""The v2_7_1 flex backward grid fix (torch_npu issue 4431): proven on the real Inductor pipeline and in C++."""

# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [file]: the v2_7_1 line's own flex fix

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

import npu_inductor_compat
from npu_inductor_compat.v2_7_1 import flex

FLEX_EXAMPLE = ROOT / "examples" / "flex_attention.py"
GRID_ID = "flex-backward-symbolic-grid"


def on_old_flex_line() -> bool:
    return npu_inductor_compat.torch_line() == "v2_7_1"


def statuses() -> dict[str, dict[str, Any]]:
    return {fix["id"]: fix for fix in npu_inductor_compat.status()["fixes"]}


def flex_codegen(tmp_path: Path, *extra: str) -> tuple[Any, Any]:
    out = tmp_path / "out"
    # stock Inductor's flex grid, whatever the default on this torch
    done = run_codegen(FLEX_EXAMPLE, "--dynamic", "--cpp-wrapper", *extra, out=out)
    assert done.summary is not None, done.stderr[-3000:]
    return done, done.summary


@pytest.mark.subprocess
def test_with_the_fix_every_flex_graph_gets_a_cpp_wrapper_with_a_symbolic_backward_grid(tmp_path: Path) -> None:
    """Flex attention forward + backward (GQA 4:2, odd length 37, score_mod and mask_mod) with dynamic shapes and
    cpp_wrapper, through the codegen command: real Inductor codegen on the simulated NPU."""
    if not on_old_flex_line():
        pytest.skip("the plain backward grid exists on torch 2.7.x-2.8.x only")
    done, summary = flex_codegen(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary["fixes"][GRID_ID] == "applied"
    assert [(g["kind"], g["wrapper"], g["error"]) for g in summary["graphs"]] == [
        ("forward", "cpp", None),
        ("backward", "cpp", None),
    ]
    backward = next(g for g in summary["graphs"] if g["kind"] == "backward")
    template = next(name for name in backward["kernels"] if name.startswith("triton_tem_"))
    source = (tmp_path / "out" / f"graph_{backward['index']}" / "wrapper.cpp").read_text()
    call = re.search(rf"^\s*call_{template}\((.*)\);$", source, re.M)
    assert call, f"no call of {template} in the C++ wrapper"
    # grid_0 is cdiv(num_queries, BLOCK_M2) * (q_heads // kv_heads) + cdiv(num_kv, BLOCK_N1) over a symbolic length
    args = call.group(1)
    assert re.search(r"c10::div_floor_integer\(.*\bs\d+\b", args), args
    # grid_1 = 1, grid_2 = batch * kv_heads = 2 * 2; torch >= 2.8 passes the device index before the stream
    assert re.search(r", 1, 4L, (\d+, )?stream\d+$", args), args


@pytest.mark.subprocess
def test_without_the_fix_the_backward_fails_with_the_symbolic_grid_assertion(tmp_path: Path) -> None:
    """The bug is real on this line: captured in summary.json although AOTAutograd swallows the eager failure."""
    if not on_old_flex_line():
        pytest.skip("the plain backward grid exists on torch 2.7.x-2.8.x only")
    done, summary = flex_codegen(tmp_path, "--without-fix", GRID_ID)
    assert done.returncode == 1
    assert summary["fixes"][GRID_ID] == "skipped"
    graphs = {g["kind"]: g for g in summary["graphs"]}
    assert graphs["forward"]["error"] is None and graphs["forward"]["wrapper"] == "cpp"
    assert graphs["backward"]["error"]["type"] == "AssertionError"
    assert "cpp_wrapper requires SymbolicGridFn" in graphs["backward"]["error"]["message"]


@pytest.mark.subprocess
def test_without_the_configs_record_torch_2_7s_flex_asks_cuda_and_fails(tmp_path: Path) -> None:
    """Record flex-configs-from-device: torch 2.7/2.8 size flex's blocks from torch.cuda's device properties
    whatever the device; without the record the forward asks CUDA, which this machine (like an NPU host) lacks."""
    if not on_old_flex_line():
        pytest.skip("flex configs ask the device itself from torch 2.9")
    done, summary = flex_codegen(tmp_path, "--without-fix", flex.CONFIGS_FROM_DEVICE.id)
    assert done.returncode == 1
    assert summary["fixes"][flex.CONFIGS_FROM_DEVICE.id] == "skipped"
    forward = next(g for g in summary["graphs"] if g["kind"] == "forward")
    assert "NVIDIA driver" in forward["error"]["message"], forward["error"]


def test_on_later_lines_the_record_is_not_needed_and_nothing_is_patched() -> None:
    module = flex._flex_module()
    assert module is not None
    template = module.flex_attention_backward_template
    grid_before = template.grid
    npu_inductor_compat.activate()
    fix = statuses()[GRID_ID]
    if on_old_flex_line():
        assert fix["status"] == "applied" and template.grid is not grid_before
        npu_inductor_compat.deactivate()
        assert template.grid is grid_before
    else:
        assert (fix["status"], fix["detail"]) == ("not needed", "upstream has it")
        assert template.grid is grid_before
        assert statuses()["flex-configs-from-device"]["status"] == "not needed"


def reference_grid(b: int, hq: int, m: int, d: int, hkv: int, n: int, block_m2: int, block_n1: int) -> tuple[int, ...]:
    """torch 2.7's own backward grid where it exists; elsewhere its layout written out independently."""
    if on_old_flex_line():
        module = flex._flex_module()
        return tuple(
            module.flex_attention_backward_grid(b, hq, m, d, hkv, n, {"BLOCK_M2": block_m2, "BLOCK_N1": block_n1})
        )
    return (-(-m // block_m2) * (hq // hkv) + -(-n // block_n1), 1, b * hkv)


sizes = st.tuples(
    st.integers(1, 64),  # batch
    st.integers(1, 8),  # kv heads
    st.integers(1, 8),  # q heads per kv head (GQA ratio)
    st.integers(1, 5000),  # queries
    st.sampled_from([16, 32, 64, 128]),  # head dim
    st.integers(1, 5000),  # keys/values
    st.sampled_from([16, 32, 64, 128]),  # BLOCK_M2
    st.sampled_from([16, 32, 64, 128]),  # BLOCK_N1
)


@pytest.mark.build
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(sizes, min_size=25, max_size=60))
def test_symbolic_grid_equals_the_2_7_grid_in_python_and_compiled_cpp(
    cases: list[tuple[int, ...]], tmp_path: Path
) -> None:
    """The C++ expression is printed by this torch's own C++ printer, compiled with g++ against torch's c10 header
    and run: it gives the same integers as the 2.7 grid for every case."""
    import sympy
    from torch._inductor.codegen.cpp_utils import cexpr
    from torch.utils.cpp_extension import include_paths

    grid = flex._symbolic_grid(None)
    names = ("b", "hkv", "ratio", "m", "d", "n", "bm2", "bn1")
    b, hkv, ratio, m, d, n, bm2, bn1 = sympy.symbols(names, integer=True, positive=True)
    symbolic = grid.sympy_call(b, hkv * ratio, m, d, hkv, n, {"BLOCK_M2": bm2, "BLOCK_N1": bn1})
    expected = []
    for case in cases:
        cb, ckv, cratio, cm, cd, cn, cbm2, cbn1 = case
        want = reference_grid(cb, ckv * cratio, cm, cd, ckv, cn, cbm2, cbn1)
        assert tuple(grid(cb, ckv * cratio, cm, cd, ckv, cn, {"BLOCK_M2": cbm2, "BLOCK_N1": cbn1})) == want
        expected.append(want)
    rows = ",\n".join("{" + ", ".join(f"{v}L" for v in case) + "}" for case in cases)
    program = f"""
#include <c10/util/generic_math.h>
#include <cstdint>
#include <cstdio>
int main() {{
  const int64_t cases[][8] = {{{rows}}};
  for (const auto& c : cases) {{
    const int64_t {", ".join(f"{name} = c[{i}]" for i, name in enumerate(names))};
    (void)d;
    std::printf("%lld %lld %lld\\n", (long long)({cexpr(symbolic[0])}),
                (long long)({cexpr(sympy.sympify(symbolic[1]))}), (long long)({cexpr(symbolic[2])}));
  }}
}}
"""
    compiler = shutil.which("g++")
    assert compiler, "g++ is needed for this test"
    source, binary = tmp_path / "grid.cpp", tmp_path / "grid"
    source.write_text(program)
    flags = [f"-I{path}" for path in include_paths()]
    built = subprocess.run(
        [compiler, "-std=c++17", *flags, str(source), "-o", str(binary)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run([str(binary)], capture_output=True, text=True, check=True)
    got = [tuple(int(v) for v in line.split()) for line in ran.stdout.splitlines()]
    assert got == expected
