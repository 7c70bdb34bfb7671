"""Flex decoding on torch 2.7.x-2.8.x: a key/value split without blocks reads its first block index past the end of
the block-index tensor; torch 2.9 wraps that index, and so does this record (docs/codegen.md)."""

# Nothing here imports torch until a record is probed or applied.

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import Change, Patch

DECODING_MODULE = "torch._inductor.kernel.flex_decoding"  # torch 2.7.x-2.8.x; 2.9 moved it to kernel/flex/
# the template's two reads of a split's first block index (the partial blocks', then the full blocks')
UNWRAPPED = "indices_idx = block_n_start // SPARSE_KV_MULTIPLE"
# torch 2.9's form (kernel/flex/templates/flex_decode.py.jinja): modulo the last dimension of the block indices
WRAPPED = 'indices_idx = (block_n_start // SPARSE_KV_MULTIPLE) % ({{size("KV_IDX", -1)}})'


@functools.cache
def template_source() -> str:
    """The decoding template's source as torch's module builds it: the ``source=`` expression of its
    ``flex_decoding_template = TritonTemplate(...)``, evaluated in the module (the template keeps only its jinja
    form). Read once a process: the probe and the change both ask."""
    module = importlib.import_module(DECODING_MODULE)
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.Assign) and [ast.unparse(target) for target in node.targets] == [
            "flex_decoding_template"
        ]:
            call = node.value
            if isinstance(call, ast.Call):
                for keyword in call.keywords:
                    if keyword.arg == "source":
                        expression = ast.Expression(keyword.value)
                        value = eval(compile(expression, DECODING_MODULE, "eval"), vars(module))
                        if isinstance(value, str):
                            return value
    raise LookupError(f"{DECODING_MODULE} builds no flex_decoding_template from a source= string")


def wraps_the_index() -> bool:
    """The probe: the installed template already wraps a split's first block index (or reads it no other way).
    torch 2.9 on keep the template in kernel/flex/templates/flex_decode.py.jinja, which wraps it."""
    if importlib.util.find_spec(DECODING_MODULE) is not None:
        return UNWRAPPED not in template_source()
    flex = importlib.import_module("torch._inductor.kernel.flex")
    jinja = Path(str(flex.__file__)).parent / "templates" / "flex_decode.py.jinja"
    return not jinja.is_file() or UNWRAPPED not in jinja.read_text()


def _wrapped_template(old: Any) -> Any:
    """The template's jinja form, built as torch builds it, from its source with both reads wrapped."""
    from torch._inductor.kernel.flex_decoding import flex_decoding_template

    source = template_source()
    if source.count(UNWRAPPED) != 2:
        raise LookupError(
            f"torch's decoding template reads a split's first block index {source.count(UNWRAPPED)} "
            "time(s), not the 2 this record rewrites"
        )
    return flex_decoding_template._template_from_string(source.replace(UNWRAPPED, WRAPPED))


DECODING_INDEX_WRAP = Patch(
    id="flex-decoding-block-index-wrap",
    proven_by=(
        "tests/lines/test_flex_decoding_index.py::test_without_the_record_the_decoding_kernel_reads_past_its_block_indices",
        "tests/tools/wheel/test_torch_npu_flex.py::test_flex_attention_forward_and_dynamic_backward_lower_by_default",
    ),
    layer="fix",
    why=(
        "torch 2.7/2.8's flex decoding kernel gives each key/value split its first block index with "
        "tl.load(kv_indices + block_n_start // SPARSE_KV_MULTIPLE) before it knows the split has blocks; with more "
        "splits than blocks (a short sequence over an NPU's 20-40 splits) it reads past the end of KV_IDX and "
        "FULL_KV_IDX (an unused value, but memory of another tensor, or a fault); torch 2.9 wraps the index modulo "
        "the tensor's last dimension, as here"
    ),
    upstream="torch 2.9 kernel/flex/templates/flex_decode.py.jinja (MAX_KV_IDX); torch 2.7/2.8 "
    "kernel/flex_decoding.py flex_decoding_template",
    remove_when="MIN_SUPPORTED >= (2, 9): torch's template wraps the index",
    lines=("v2_7_1",),
    changes=(Change(f"{DECODING_MODULE}:flex_decoding_template.template", _wrapped_template),),
    upstream_has_fix=wraps_the_index,
)

FIXES = (DECODING_INDEX_WRAP,)

__all__ = ["DECODING_INDEX_WRAP", "FIXES", "template_source", "wraps_the_index"]
