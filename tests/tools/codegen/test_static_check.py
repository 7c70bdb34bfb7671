"""The static check every codegen run makes on its Triton kernels: valid Python, no name read before it is defined."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated.codegen.static_check import check, check_source

pytestmark = pytest.mark.once

HEADER = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math

@triton_heuristics.pointwise(size_hints={'x': 8}, filename=__file__, triton_meta={}, inductor_meta={})
@triton.jit
"""

GOOD = HEADER + textwrap.dedent(
    """
    def triton_poi_fused_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
        xnumel = 8
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
        for r0_offset in range(0, r0_numel, R0_BLOCK):
            r0_index = r0_offset + tl.arange(0, R0_BLOCK)[None, :]
            tmp0 = tl.load(in_ptr0 + (r0_index + 8 * xindex), xmask, other=0.0)
            tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
            _tmp2 = _tmp2 + tmp1
        if XBLOCK > 1:
            tmp3 = tl.sum(_tmp2, 1)[:, None]
        else:
            tmp3 = tl_math.sin(tl.sum(_tmp2, 1)[:, None])
        tmp4 = libdevice.pow(tmp3, 2.0) + triton_helpers.maximum(tmp3, tmp3) + abs(1)
        tl.store(out_ptr0 + (xindex), tmp4, xmask)
    """
)


def _kernel(body: str) -> str:
    return HEADER + "def triton_poi_fused_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n" + body


def test_a_kernel_as_inductor_writes_it_passes() -> None:
    assert check_source(GOOD, "triton_poi_fused_0") == []


def test_a_name_read_before_its_assignment_is_found_naming_kernel_name_and_line() -> None:
    """As torch_npu 2.12.0.post3's kernel for Llama's RoPE backward does: tmp4 read, assigned only later."""
    source = _kernel(
        "    x0 = xnumel\n"
        "    tmp3 = tl.load(in_ptr0 + x0)\n"
        "    tmp5 = tmp3 * tmp4\n"
        "    tmp4 = tmp3 + 1\n"
        "    tl.store(out_ptr0 + x0, tmp5 + tmp4)\n"
    )
    (problem,) = check_source(source, "triton_poi_fused_0")
    line = source.splitlines().index("    tmp5 = tmp3 * tmp4") + 1
    assert problem == f"kernel triton_poi_fused_0: reads 'tmp4' before defining it (line {line})"


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("    tl.store(out_ptr0, tmp9)\n", "tmp9"),  # never defined
        ("    tmp0 += 1\n", "tmp0"),  # augmented assignment reads first
        ("    for r in range(4):\n        acc = acc + r\n    tl.store(out_ptr0, acc)\n", "acc"),  # no initial value
        ("    if xnumel > 1:\n        pass\n    tl.store(out_ptr0, tmp1)\n", "tmp1"),
        ("    tmp0 = tl.load(in_ptr0) if xnumel else tmp0\n", "tmp0"),  # the value is read before the target
    ],
)
def test_each_way_of_reading_an_undefined_name_is_found(body: str, name: str) -> None:
    problems = check_source(_kernel(body), "triton_poi_fused_0")
    assert [problem.split("'")[1] for problem in problems] == [name], problems


def test_a_branch_defines_for_the_code_after_it_as_triton_merges_branches() -> None:
    body = "    if xnumel > 1:\n        tmp0 = 1\n    else:\n        tmp0 = 2\n    tl.store(out_ptr0, tmp0)\n"
    assert check_source(_kernel(body), "triton_poi_fused_0") == []


def test_a_kernel_that_is_not_python_is_a_problem_not_a_traceback() -> None:
    (problem,) = check_source(_kernel("    tmp0 = = 1\n"), "triton_poi_fused_0")
    assert problem.startswith("kernel triton_poi_fused_0: not valid Python: ")


def test_check_reads_the_runs_kernels_from_its_summary_and_records_the_result(tmp_path: Path) -> None:
    (tmp_path / "graph_0" / "kernels").mkdir(parents=True)
    (tmp_path / "graph_0" / "kernels" / "good.py").write_text(GOOD)
    (tmp_path / "graph_0" / "kernels" / "bad.py").write_text(_kernel("    tl.store(out_ptr0, tmp7)\n"))
    kernels = {
        "triton_poi_fused_0": {"defined_with": "triton", "source": "graph_0/kernels/good.py"},
        "triton_poi_fused_1": {"defined_with": "triton", "source": "graph_0/kernels/bad.py"},
        "cpp_fused_2": {"defined_with": "cpp", "source": None},
    }
    summary = {"graphs": [{"index": 0, "files": {"kernels": kernels}}]}
    failures = check(lambda relative: (tmp_path / relative).read_text(), summary)
    assert [failure["kernel"] for failure in failures] == ["triton_poi_fused_1"]
    assert "reads 'tmp7' before defining it" in failures[0]["problems"][0]
    assert json.loads(json.dumps(summary["static_check"])) == {"kernels": 2, "failures": failures}
