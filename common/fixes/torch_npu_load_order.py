"""Fix record for torch_npu's index kernel permuting a transposed load under a computed mask before loading it, with
the mask in the wrong layout: every release has the code, none has fixed it (docs/torch-npu-reports.md, RoPE)."""

# Importing this module imports no torch or torch_npu module; the record's wrapper runs only inside Inductor codegen.

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.device.cse_steering import generate_steered
from npu_inductor_compat.patching import Change, Patch, wraps_original

INDEX_KERNEL_LOAD = torch_npu_names.qualname("index-kernel-load")
_PERMUTE = re.compile(r"\.permute\(\[(\d+(?:,\s*\d+)*)\]\)")
_CSE_VARIABLE = re.compile(r"tmp\d+")


def computed_mask_in_load_layout(load: str, statement: str) -> str | None:
    """``load`` (``tl.load(ptr + (index), mask, ...)``, its index in the layout torch_npu chose for the load) with
    each CSE variable of its mask permuted into that layout, for a value then permuted by ``statement``
    (``.permute([...])``). The mask's own axis masks are already in the load's layout; a computed one (``tmp2 = x3 <
    8``) is in the kernel's. None when ``statement`` is anything but one permute or the load has no such mask.

    Moving the permute after its load is not enough: the load's index is in the load's own layout (``x3_1``,
    ``y0_0``: the var_directions of IndexAnalysis.analyze_var_direction) while a computed mask is in the kernel's
    (``tmp2 = x3 < 8``), so the mask is permuted back into the load's layout too; the permute alone gives a wrong
    gradient in Triton's interpreter (tests/common/fixes/test_torch_npu_load_order.py).
    """
    found = _PERMUTE.fullmatch(statement)
    try:
        tree = ast.parse(load, mode="eval")
    except SyntaxError:
        return None
    call = next(
        (node for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load"), None
    )
    if found is None or call is None or len(call.args) < 2:
        return None
    order = [int(axis) for axis in found.group(1).split(",")]
    if sorted(order) != list(range(len(order))):
        return None
    # value.permute(order) puts the load's axis order[i] at i; a mask in the kernel's layout goes back by the inverse
    inverse = [order.index(axis) for axis in range(len(order))]
    names = [
        node
        for node in ast.walk(call.args[1])
        if isinstance(node, ast.Name) and _CSE_VARIABLE.fullmatch(node.id) and node.end_col_offset is not None
    ]
    if not names:
        return None
    for node in sorted(names, key=lambda node: node.col_offset, reverse=True):
        load = f"{load[: node.col_offset]}{node.id}.permute({inverse}){load[node.end_col_offset :]}"
    return load


def _statement_after_its_load(original: Callable[..., Any]) -> Callable[..., Any]:
    """load() with its kernel's CSE steering the permute of a load under a computed mask: while the call runs, a
    ``.permute(...)`` written into ``self.loads`` of a variable this call loaded into ``self.compute`` goes into
    ``self.compute`` right after the load, and the load's computed mask is permuted into the load's layout. Anything
    else (another statement, a load CSE found already made) is generated as torch_npu chose, and the CSE's own
    ``generate`` is back in place when the call returns or raises.

    NPUIndexTritonKernel.load (torch_npu/_inductor/codegen/triton.py, read in every wheel from 2.7.1.post11 to
    2.14.0) picks the buffer a load goes to: ``self.compute`` when its mask is a computed variable ("Masked loads must
    come after the mask is computed"), ``self.prefix`` when it can be hoisted out of a reduction loop, else
    ``self.loads``. It then writes the reshape/broadcast/permute of a transposed load (``index_analyze.need_permute``,
    kernel_analysis.py IndexAnalysis.generate_statement) into ``self.loads`` whatever the load's buffer was. The
    kernel body is emitted loads first, then compute, so for a load in compute the permute reads its variable before
    the load assigns it: ``tmp5 = tmp4.permute([1, 0])`` ... ``tmp4 = tl.load(..., tmp2 & ...)`` (Llama's RoPE
    backward on 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3; the other releases tile that script so the two
    never meet). The mask's layout: :func:`computed_mask_in_load_layout`.
    """

    @wraps_original(original)
    def load(self: Any, name: str, index: Any) -> Any:
        loads, compute = self.loads, self.compute
        loaded: dict[str, tuple[int, str]] = {}  # variable -> its line in compute, and the load expression

        def steer(generate: Callable[..., Any]) -> Callable[..., Any]:
            def steered(buffer: Any, expr: Any, *args: Any, **kwargs: Any) -> Any:
                head, dot, statement = expr.partition(".") if isinstance(expr, str) else ("", "", "")
                if buffer is loads and dot and head in loaded:
                    at, load_expr = loaded.pop(head)
                    line = compute._lines[at]
                    fixed = computed_mask_in_load_layout(load_expr, f".{statement}")
                    if fixed is not None and isinstance(line, str) and line.endswith(load_expr):
                        compute._lines[at] = line[: len(line) - len(load_expr)] + fixed
                        buffer = compute
                written = len(compute._lines)
                var = generate(buffer, expr, *args, **kwargs)
                if (
                    buffer is compute
                    and isinstance(expr, str)
                    and expr.startswith("tl.load(")
                    and len(compute._lines) == written + 1
                ):
                    loaded[str(var)] = (written, expr)
                return var

            return steered

        with generate_steered(self.cse, steer):
            return original(self, name, index)

    return load


MASKED_LOAD_PERMUTE_ORDER = Patch(
    id="torch-npu-masked-load-permute-order",
    proven_by=(
        "tests/common/fixes/test_torch_npu_load_order.py::test_the_record_loads_rope_backwards_permuted_operand_in_order_and_right",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel puts a load under a computed mask into its compute buffer but the load's "
        "permute into its loads buffer, emitted first, and leaves the computed mask in the kernel's layout: the "
        "kernel reads tmpN.permute(...) before tmpN = tl.load(...) and cannot compile (Llama's RoPE backward); the "
        "permute goes after its load and the mask into the load's layout"
    ),
    upstream=(
        "not fixed in torch_npu: NPUIndexTritonKernel.load writes the permute into self.loads in every release "
        "(2.7.1.post11 to 2.14.0; codegen/triton.py); report text in docs/torch-npu-reports.md"
    ),
    remove_when="torch_npu's load writes a load's permute into the load's own buffer, its computed mask permuted",
    # No probe: no release has the fix (read in each wheel; the survey's detector checks them), and the change
    # touches only a load whose permute would otherwise be read before the load (a kernel that cannot compile).
    changes=(Change(INDEX_KERNEL_LOAD, _statement_after_its_load, optional=True),),
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (MASKED_LOAD_PERMUTE_ORDER,)

__all__ = ["FIXES", "MASKED_LOAD_PERMUTE_ORDER"]
