"""Fix record for torch_npu's index kernel broadcasting a load at a constant index to the kernel's rank, which
triton refuses (``tl.broadcast_to`` keeps the rank): its other branches reshape it (docs/torch-npu-reports.md)."""

# Importing this module imports no torch or torch_npu module; the wrapper runs only inside Inductor codegen.

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.device.cse_steering import generate_steered
from npu_inductor_compat.patching import Change, Patch, wraps_original

INDEX_KERNEL_LOAD = torch_npu_names.qualname("index-kernel-load")
# torch_npu's statement for a constant-index load's size-1 dimensions: the variable and the shape
_BROADCAST = re.compile(r"tl\.broadcast_to\((tmp\d+), (\[1(?:, 1)* ?\])\)")


def broadcasts_constant_load(function: ast.AST) -> bool:
    """Whether ``load`` (its syntax tree) writes a constant-index load's size-1 dimensions with ``tl.broadcast_to``
    (the bug) rather than ``tl.reshape``: an f-string of ``tl.broadcast_to(`` with ``append_broadcast``."""
    return any(
        isinstance(node, ast.JoinedStr)
        and ast.unparse(node).startswith(("f'tl.broadcast_to(", 'f"tl.broadcast_to('))
        and "append_broadcast" in ast.unparse(node)
        for node in ast.walk(function)
    )


def load_reshapes_constant_loads() -> bool:
    """The probe: the installed NPUIndexTritonKernel.load, read from its source, gives a constant-index load its
    size-1 dimensions by reshaping it (the releases where the bug does not arise)."""
    return not broadcasts_constant_load(torch_npu_names.source_tree("index-kernel-load"))


def _constant_load_reshaped(original: Callable[..., Any]) -> Callable[..., Any]:
    """load() with its kernel's CSE steering one statement: while the call runs, ``tl.broadcast_to(tmpN, [1, ...])``
    of a variable this call loaded at a constant index (``tl.arange(0,1) +``) is generated as ``tl.reshape(tmpN,
    [1, ...])``. Everything else is generated as torch_npu wrote it, and the CSE's own ``generate`` is back in place
    when the call returns or raises.

    NPUIndexTritonKernel.load (torch_npu/_inductor/codegen/triton.py) loads an element at a constant index (a 0-d
    tensor: the loss gradient of `.sum()`) as a block of one, ``tl.load(ptr + tl.arange(0,1) + (k))``, and then
    gives it one size-1 dimension per tiling axis. 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 write that as
    ``tl.broadcast_to(tmpN, [1, 1 ])``: with two or more tiling axes triton rejects it (``Cannot broadcast, rank
    mismatch: [1], [1, 1]``) and the kernel cannot compile. 2.7.1.post11, 2.9.0.post9 and 2.10.0.post7 on write
    ``tl.reshape(tmpN, [1, 1 ])``; this wrapper makes the four releases write the same.
    """

    @wraps_original(original)
    def load(self: Any, name: str, index: Any) -> Any:
        constant_loads: set[str] = set()

        def steer(generate: Callable[..., Any]) -> Callable[..., Any]:
            def steered(buffer: Any, expr: Any, *args: Any, **kwargs: Any) -> Any:
                found = _BROADCAST.fullmatch(expr) if isinstance(expr, str) else None
                if found is not None and found.group(1) in constant_loads:
                    expr = f"tl.reshape({found.group(1)}, {found.group(2)})"
                var = generate(buffer, expr, *args, **kwargs)
                if isinstance(expr, str) and expr.startswith("tl.load(") and "tl.arange(0,1) +" in expr:
                    constant_loads.add(str(var))
                return var

            return steered

        with generate_steered(self.cse, steer):
            return original(self, name, index)

    return load


CONSTANT_LOAD_RESHAPE = Patch(
    id="torch-npu-constant-load-reshape",
    proven_by=(
        "tests/common/fixes/test_torch_npu_constant_load.py::test_the_record_reshapes_the_loss_gradient_and_the_kernel_compiles_and_is_right",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel gives a load at a constant index (a 0-d tensor such as a sum's gradient) one size-1 "
        "dimension per tiling axis with tl.broadcast_to, which keeps the rank: with two tiling axes triton rejects "
        "it (Cannot broadcast, rank mismatch: [1], [1, 1]) and the kernel cannot compile; it is reshaped instead"
    ),
    upstream=(
        "torch_npu's v2.7.1 and v2.9.0 branches and 2.10.0.post7 on (NPUIndexTritonKernel.load writes tl.reshape); "
        "missing from 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3"
    ),
    remove_when="no torch_npu release in use broadcasts a constant-index load to the kernel's rank",
    changes=(Change(INDEX_KERNEL_LOAD, _constant_load_reshaped, optional=True),),
    upstream_has_fix=load_reshapes_constant_loads,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (CONSTANT_LOAD_RESHAPE,)
# NPUIndexTritonKernel.load: the permuted masked load (torch_npu_load_order.py) applies first, this record over it
AFTER = ("torch_npu_load_order",)

__all__ = ["CONSTANT_LOAD_RESHAPE", "FIXES", "broadcasts_constant_load"]
