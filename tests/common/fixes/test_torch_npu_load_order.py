"""torch-npu-masked-load-permute-order (common/fixes/torch_npu_load_order.py): the mask rewrite on its own, then the
record on torch_npu's released codegen for Llama's RoPE backward, the kernel run in Triton's interpreter against
autograd."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernels on the exact torch its wheel requires; triton-ascend's
# front end lowers every config torch_npu's heuristics give; and the kernel itself runs in Triton's interpreter
# (TRITON_INTERPRET=1, the real triton.language on CPU tensors) with those configs, against torch's autograd.

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.fixes.torch_npu_load_order import (
    MASKED_LOAD_PERMUTE_ORDER,
    computed_mask_in_load_layout,
)

ROPE = ROOT / "examples" / "torch_npu_rope_backward.py"
# The releases whose RoPE backward kernel reads a transposed masked load's permute before the load (seen on each
# pair); the others tile the script so that no transposed load has a computed mask
ROPE_BROKEN = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")
RECORD = MASKED_LOAD_PERMUTE_ORDER.id

# torch_npu 2.12.0.post3's load of the rotated half of `sin` (examples/torch_npu_rope_backward.py): its index in the
# load's (y0, x3) layout, its computed mask tmp2 in the kernel's (x3, y0) one
LOAD = (
    "tl.load(in_ptr1 + (8 + x3_1 + 16*y0_0 + 256*y2), tmp2 & x3_1_mask & y0_0_mask, other=0.0)"
    ".to(tl.float32).to(tl.float32)"
)


def test_a_computed_mask_is_permuted_back_into_the_loads_layout() -> None:
    assert computed_mask_in_load_layout(LOAD, ".permute([1, 0])") == LOAD.replace("tmp2 &", "tmp2.permute([1, 0]) &")
    # the inverse of the value's permute: value.permute([1, 2, 0]) takes the mask back with [2, 0, 1]
    three = "tl.load(in_ptr0 + (x0_1 + tmp7), tmp3 & (tmp5 | x0_1_mask))"
    assert computed_mask_in_load_layout(three, ".permute([1, 2, 0])") == (
        "tl.load(in_ptr0 + (x0_1 + tmp7), tmp3.permute([2, 0, 1]) & (tmp5.permute([2, 0, 1]) | x0_1_mask))"
    )


def test_only_one_permute_of_a_load_with_a_computed_mask_is_rewritten() -> None:
    for statement in (".reshape([X0BLOCK_SUB, 1])", ".permute([1, 0]).reshape([4])", ".permute([0, 0])", ""):
        assert computed_mask_in_load_layout(LOAD, statement) is None, statement
    axis_masks_only = "tl.load(in_ptr1 + (x3_1 + 16*y0_0), x3_1_mask & y0_0_mask)"
    assert computed_mask_in_load_layout(axis_masks_only, ".permute([1, 0])") is None
    assert computed_mask_in_load_layout("tl.load(in_ptr1 + (x3_1", ".permute([1, 0])") is None


# ------------------------------------------------------------------------------------------------ torch_npu's code
def _codegen(cwd: Path, name: str, *flags: str) -> tuple[str, int, dict[str, Any], list[str], Path]:
    run = harness.codegen(ROPE, ROPE_BROKEN, cwd / name, *flags)
    return run.release, run.returncode, run.summary, run.problems, cwd / name


# The key's gradient kernel of the backward graph, run in Triton's interpreter with each config torch_npu gave it.
# Its arguments come from the wrapper's launch line: the gradient of key.transpose(-2, -1) from the scores' bmm (as
# autograd gives it), the saved cos and sin (primals_3 and primals_4: dynamo lifts them after the two arguments, in
# the order the function reads them), the output, then the numels. Compared with autograd's key gradient in bf16.
INTERPRETED = r"""

torch.manual_seed(0)
b, s, h, d = 2, 16, 2, 16
q = torch.randn(b, s, h * d, dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(b, s, h * d, dtype=torch.bfloat16, requires_grad=True)
angles = torch.randn(b, s, d)
cos, sin = angles.cos().bfloat16(), angles.sin().bfloat16()
def rotate_half(x):
    return torch.cat((-x[..., d // 2:], x[..., :d // 2]), dim=-1)
query, key = (x.view(b, s, h, d).transpose(1, 2) for x in (q, k))
query = query * cos.unsqueeze(1) + rotate_half(query) * sin.unsqueeze(1)
key = key * cos.unsqueeze(1) + rotate_half(key) * sin.unsqueeze(1)
key_t = key.transpose(-2, -1).detach().requires_grad_()
(grad_key_t,) = torch.autograd.grad((query.detach() @ key_t).sum(), key_t)
(query @ key.transpose(-2, -1)).sum().backward()

names = launch["pointers"]
tensors = {names[0]: grad_key_t.contiguous().view(b * h, d, s), "primals_3": cos, "primals_4": sin}
results = []
for config in configs:
    out = torch.zeros(b, s, h, d, dtype=torch.bfloat16)
    error = launched(config, [tensors.get(name, out) for name in names])
    if error is not None:
        results.append({"config": config, "error": error})
        continue
    error = (out.view(b, s, h * d).float() - k.grad.float()).abs().max().item()
    results.append({"config": config, "error": None, "max_abs_error": error})
print(json.dumps({"results": results, "largest": k.grad.float().abs().max().item()}))
"""


def _interpreted(source: str, wrapper: str, name: str, configs: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = harness.interpret(INTERPRETED, source, wrapper, name, configs)
    return found


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_loads_rope_backwards_permuted_operand_in_order_and_right(tmp_path: Path) -> None:
    """Without the record, torch_npu's index kernel permutes a transposed load guarded by a computed mask (the halves
    of rotate_half's cat) before it loads it: ``tmp5 = tmp4.permute(...)`` comes before ``tmp4 = tl.load(...)``. With
    it the permute follows the load and the mask is permuted into the load's layout: triton-ascend's front end
    lowers every config, and the kernel gives autograd's key gradient in Triton's interpreter with each of them.
    The same kernel with only the order fixed (its mask left in the kernel's layout) does not."""
    release, returncode, plain, problems, _ = _codegen(tmp_path, "without", "--without-fix", RECORD)
    if release not in ROPE_BROKEN:  # a release that never generates the bug: the record changes no kernel
        assert returncode == 0 and problems == [], problems
        _, _, fixed, _, _ = _codegen(tmp_path, "with")
        kernels = harness.kernel_sources(tmp_path / "with", fixed, 1)
        assert kernels == harness.kernel_sources(tmp_path / "without", plain, 1)
        assert not any(re.search(r"tl\.load\([^\n]*\btmp\d+\.permute\(", source) for source in kernels.values())
        return
    assert returncode == 1 and any("reads 'tmp4' before defining it" in problem for problem in problems), problems

    _, returncode, fixed, problems, out = _codegen(tmp_path, "with", "--check-kernels")
    assert fixed["fixes"][RECORD] == "applied"
    assert returncode == 0 and problems == [], problems
    check = fixed["kernel_check"]
    assert check["error"] is None and check["rejected"] == 0 and check["configs"] > 0, check
    # the kernel whose output the backward returns as the key's gradient (its second result)
    wrapper = (out / fixed["graphs"][1]["files"]["wrapper"]).read_text()
    returned = re.findall(r"reinterpret_tensor\((buf\d+),", wrapper.split("return (")[-1])
    name = next(
        kernel
        for kernel in harness.kernel_sources(out, fixed, 1)
        if re.search(rf"\b{kernel}\.run\([^)]*\b{returned[1]},", wrapper)
    )
    source = harness.kernel_sources(out, fixed, 1)[name]
    assert re.search(r"tl\.load\([^\n]*\btmp\d+\.permute\(\[1, 0\]\) &", source), source
    configs = [result["config"] for result in fixed["graphs"][1]["kernel_check"][name]]

    found = _interpreted(source, wrapper, name, configs)
    assert len(found["results"]) == len(configs) >= 2
    for result in found["results"]:  # within bf16's rounding of the largest gradient (8 bits of mantissa)
        assert result["error"] is None and result["max_abs_error"] <= found["largest"] / 128, result
    order_only = re.sub(r"\b(tmp\d+)\.permute\(\[1, 0\]\) &", r"\1 &", source)
    wrong = _interpreted(order_only, wrapper, name, configs)["results"]
    assert any(r["error"] is not None or r["max_abs_error"] > found["largest"] / 8 for r in wrong), wrong
