"""Fix record for torch_npu's index kernel storing a block through a scalar pointer in a persistent reduction over two
axes (batch norm), which triton refuses: the store is written as the releases before the guard write it."""

# Importing this module imports no torch or torch_npu module; the wrappers run only inside Inductor codegen.

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

STORE = torch_npu_names.qualname("index-kernel-store")
STORE_REDUCTION = torch_npu_names.qualname("index-kernel-store-reduction")
BLOCK_OF_ONE = "tl.arange(0,1)"


def persistent_reductions_left_out(function: ast.AST) -> bool:
    """Whether a store method (its syntax tree) writes the ``tl.arange(0,1)`` form under a test that leaves out
    persistent reductions (the bug)."""
    return any(
        isinstance(node, ast.If)
        and "persistent_reduction" in ast.unparse(node.test)
        and BLOCK_OF_ONE in ast.unparse(ast.Module(body=node.body, type_ignores=[]))
        for node in ast.walk(function)
    )


def stores_write_a_block_of_one() -> bool:
    """The probe: neither installed store method, read from its source, leaves persistent reductions out of the
    ``+ tl.arange(0,1)`` form (the releases where the bug does not arise)."""
    return not any(
        persistent_reductions_left_out(torch_npu_names.source_tree(hook))
        for hook in ("index-kernel-store", "index-kernel-store-reduction")
    )


def with_block_of_one(line: str) -> str:
    """``line`` with ``+ tl.arange(0,1)`` added to the index of its ``tl.store(ptr + (index), ...)``; unchanged when it
    is no such store (a block-pointer store, an atomic add) or its pointer has a ``tl.arange`` already."""
    body = line.lstrip()
    try:
        call = ast.parse(body, mode="eval").body
    except SyntaxError:
        return line
    if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "tl.store" and call.args):
        return line
    pointer = call.args[0]
    if not (isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add)):
        return line
    index = pointer.right
    if "tl.arange(" in (ast.get_source_segment(body, pointer) or "") or index.end_col_offset is None:
        return line
    cut = len(line) - len(body) + index.end_col_offset
    rest = line[cut:]  # written as torch_npu's other branches write it: ``(index + tl.arange(0,1) )``
    return f"{line[:cut]} + {BLOCK_OF_ONE}{' ' if rest.startswith(')') else ''}{rest}"


def _left_out_by_the_guard(kernel: Any) -> bool:
    """Whether ``kernel``'s stores are written without the block of one by the guard, and this fix adds it.

    NPUIndexTritonKernel.store and store_reduction (torch_npu/_inductor/codegen/triton.py) write a kernel that
    reduces over two or more axes its stores as ``tl.store(ptr + (index + tl.arange(0,1) ), value, mask)``: the index
    may be a scalar (a per-program loop variable such as batch norm's channel ``x0``) while the reduced value is a
    block of one. 2.10.0.post7, 2.13.0 and 2.14.0 guard that form with ``and not self.persistent_reduction``, which
    came with their Welford SIMD path (torch_npu master commit 6f734a9f2, "support and constrain Welford SIMD"), so a
    persistent reduction over two axes writes ``tl.store(ptr + (x0), tmpN, None)``: triton rejects it ("Value argument
    cannot be block type if pointer argument is not a block"). 2.7.1.post11, 2.9.0.post9 and the 2.8.0.post5 line add
    the block of one for every such kernel. The record adds it where the guard left it out, except in a kernel on the
    Welford SIMD path (``vectorized_welford_axis`` set), which the guard was written for.
    """
    return (
        kernel.numof_reduction_axis() > 1
        and bool(kernel.persistent_reduction)
        and getattr(kernel, "vectorized_welford_axis", None) is None
    )


def _line_lists(kernel: Any) -> list[list[Any]]:
    """The line lists a store method writes to: its kernel's stores and post-loop stores (torch's IndentedBuffers),
    and the list of deferred reduction stores of 2.10.0.post7 on."""
    lists = [getattr(kernel, name)._lines for name in ("stores", "post_loop_store") if hasattr(kernel, name)]
    deferred = getattr(kernel, "_deferred_reduction_stores", None)
    return [*lists, deferred] if isinstance(deferred, list) else lists


def _rewrite_lines_after(lines: list[Any], before: int) -> None:
    """The entries of ``lines`` from ``before`` on, each store given its block of one (a string, or a DeferredLine
    whose ``line`` is rewritten in place)."""
    for position in range(before, len(lines)):
        entry = lines[position]
        if isinstance(entry, str):
            lines[position] = with_block_of_one(entry)
        elif isinstance(getattr(entry, "line", None), str):
            entry.line = with_block_of_one(entry.line)


def _stores_a_block_of_one(original: Callable[..., Any]) -> Callable[..., Any]:
    """A store method whose new store lines, in a kernel the guard leaves out, get the block of one its other branches
    write; every other line, and every other kernel, as torch_npu wrote it."""

    @wraps_original(original)
    def store(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _left_out_by_the_guard(self):
            return original(self, *args, **kwargs)
        written = [(lines, len(lines)) for lines in _line_lists(self)]
        result = original(self, *args, **kwargs)
        for lines, before in written:
            _rewrite_lines_after(lines, before)
        return result

    return store


PERSISTENT_REDUCTION_STORE = Patch(
    id="torch-npu-persistent-reduction-store",
    proven_by=(
        "tests/common/fixes/test_torch_npu_store.py::test_the_record_stores_batch_norms_statistics_through_a_block_of_one",
    ),
    layer="fix",
    why=(
        "torch_npu's index kernel stores a persistent reduction over two axes (batch norm) as tl.store(ptr + (x0), "
        "tmpN) with a scalar x0 and a block value, which triton rejects (Value argument cannot be block type if "
        "pointer argument is not a block); the store gets the + tl.arange(0,1) its other kernels write"
    ),
    upstream=(
        "2.7.1.post11, 2.9.0.post9 and the 2.8.0.post5 line write it for every reduction over two axes; 2.10.0.post7, "
        "2.13.0 and 2.14.0 leave persistent reductions out (the guard came with Welford SIMD)"
    ),
    remove_when="no torch_npu release in use leaves persistent reductions over two axes out of that store form",
    changes=(
        Change(STORE, _stores_a_block_of_one, optional=True),
        Change(STORE_REDUCTION, _stores_a_block_of_one, optional=True),
    ),
    upstream_has_fix=stores_write_a_block_of_one,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (PERSISTENT_REDUCTION_STORE,)

__all__ = ["FIXES", "PERSISTENT_REDUCTION_STORE", "persistent_reductions_left_out", "with_block_of_one"]
