"""Records for flex attention under torch_npu's own lowering code: torch's flex lowerings back where a release made
them fallbacks, and the decoding option a release's own lowering forgets. Importing this imports no torch module."""

from __future__ import annotations

import ast
import importlib
import textwrap
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.patching import Change, Patch, wraps_original

LOWERINGS = "torch._inductor.lowering:lowerings"
# the higher-order op -> the name of torch's lowering function for it, in the line's flex module
FLEX_OPS = {
    "torch:ops.higher_order.flex_attention": "flex_attention",
    "torch:ops.higher_order.flex_attention_backward": "flex_attention_backward",
}


def _is_fallback(lowering: Any) -> bool:
    """torch's fallback_handler marks its handler, and register_lowering's functools.wraps copies the mark (every
    torch from 2.7.1 to 2.15.0: lowering.py fallback_handler, ``handler._is_fallback_handler = True``)."""
    return bool(getattr(lowering, "_is_fallback_handler", False))


def _flex_lowered_by_a_fallback() -> bool:
    import torch
    from torch._inductor import lowering

    ops = (torch.ops.higher_order.flex_attention, torch.ops.higher_order.flex_attention_backward)
    return any(_is_fallback(lowering.lowerings.get(op)) for op in ops)


def _torchs_lowering(module: str, function: str) -> Callable[[Any], Any]:
    """The lowering torch registered for the op: its flex module's function as ``register_lowering`` left it (the
    decorator returns the very object it put in ``lowerings``: lowering.py _register_lowering, 2.7.1-2.15.0)."""

    def replacement(_old: Any) -> Any:
        return getattr(importlib.import_module(module), function)

    return replacement


DEFINE_KERNEL = torch_npu_names.qualname("scheduling-define-kernel")


def _as_torch_calls_it(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch's template codegen calls ``define_kernel(src_code, node_schedule, kernel)`` and takes the kernel's name
    back (simd.py _codegen_single_template); torch_npu's requires a traced_graph_hash and returns ``(name, source)``
    for its own caller (scheduling.py codegen_node). Called torch's way, the hash is None (torch_npu reads it only
    when truthy: its debug-dump placeholders) and the name alone comes back; torch_npu's own calls are untouched."""

    @wraps_original(original)
    def define_kernel(self: Any, src_code: Any, node_schedule: Any, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        if args or "traced_graph_hash" in kwargs:
            return original(self, src_code, node_schedule, kernel, *args, **kwargs)
        found = original(self, src_code, node_schedule, kernel, None)
        return found[0] if isinstance(found, tuple) else found

    return define_kernel


def flex_lowerings_kept(adapters: LineAdapters) -> Patch:
    return Patch(
        id="torch-npu-flex-lowerings-kept",
        proven_by=(
            "tests/tools/wheel/test_torch_npu_flex.py::test_without_the_record_flex_attentions_forward_fails_with_the_releases_bug",
            "tests/tools/wheel/test_torch_npu_flex.py::test_flex_attention_forward_and_dynamic_backward_lower_by_default",
        ),
        layer="fix",
        why=(
            "torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 make a fallback of every lowering not on "
            "their list (lowering.py _register_npu_inductor_fallbacks; lowering_op_list.py GENERATE_LIST), flex "
            "attention's two higher-order ops included, and have no flex kernels of their own; a fallback cannot "
            "take flex's score and mask subgraphs, so every flex attention on npu fails to lower (\"'Subgraph' "
            "object has no attribute 'dtype'\", torch's FallbackKernel). torch's own flex lowerings are put back "
            "for those two ops, as torch_npu's other releases register their own; and their scheduling's "
            "define_kernel answers torch's template codegen as torch's does (it requires a traced_graph_hash torch "
            "never passes, and returns (name, source) where torch takes the name: the template's call would be a "
            "tuple)"
        ),
        upstream=(
            "torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3, 2.12.0.post3 lowering.py _register_npu_inductor_fallbacks; "
            "unfixed on branches v2.8.0, v2.11.0, v2.12.0; 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0, 2.14.0 "
            "and master replace the lowering with their own (lowering_override_list.py, kernel/flex_attention.py); "
            "report text in docs/torch-npu-reports.md"
        ),
        remove_when="every torch_npu release in use keeps or replaces flex attention's lowering (the probe then says "
        "not needed)",
        changes=(
            *(
                Change(LOWERINGS, _torchs_lowering(adapters.flex_lowerings, function), kind="dict_item", key_at=op)
                for op, function in FLEX_OPS.items()
            ),
            Change(DEFINE_KERNEL, _as_torch_calls_it, optional=True),
        ),
        upstream_has_fix=lambda: not _flex_lowered_by_a_fallback(),
    )


DECODING_KERNEL = torch_npu_names.qualname("flex-decoding-kernel")
KERNEL_OPTIONS = 5  # create_flex_decoding_kernel(query, key, value, block_mask, scale, kernel_options, ...)


def _float32_precision() -> Any:
    """torch's own default for the option (its flex lowering's get_float32_precision)."""
    module = importlib.import_module(f"{FLEX_PACKAGE}.flex_attention")
    return module.get_float32_precision()


def _with_float32_precision(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def create_flex_decoding_kernel(*args: Any, **kwargs: Any) -> Any:
        if len(args) > KERNEL_OPTIONS and isinstance(args[KERNEL_OPTIONS], dict):
            options = dict(args[KERNEL_OPTIONS])
            options.setdefault("FLOAT32_PRECISION", _float32_precision())
            args = (*args[:KERNEL_OPTIONS], options, *args[KERNEL_OPTIONS + 1 :])
        return original(*args, **kwargs)

    return create_flex_decoding_kernel


def _names_the_option(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Constant) and node.value == "FLOAT32_PRECISION" for node in ast.walk(tree))


def _decoding_gets_float32_precision() -> bool:
    """Whether every function of torch_npu's flex module that calls torch's decoding kernel sets the option in code
    (2.9.0.post9 has the line commented out), read from the installed source. torch's decoding template reads it on
    every torch with the flex/ package (templates/common.py.jinja), the only torch such a torch_npu runs on."""
    import inspect

    torch_npu_flex = importlib.import_module(DECODING_KERNEL.partition(":")[0])
    callers = [
        node
        for node in ast.walk(ast.parse(inspect.getsource(torch_npu_flex)))
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(call, ast.Call) and ast.unparse(call.func) == "create_flex_decoding_kernel"
            for call in ast.walk(node)
        )
    ]
    return all(_names_the_option(caller) for caller in callers)


FLEX_PACKAGE = "torch._inductor.kernel.flex"  # torch >= 2.9: the only torch a torch_npu with the name runs on

DECODING_FLOAT32_PRECISION = Patch(
    id="torch-npu-flex-decoding-precision",
    proven_by=(
        "tests/tools/wheel/test_torch_npu_flex.py::test_without_the_precision_record_the_decoding_kernel_reads_an_option_it_never_defines",
        "tests/tools/wheel/test_torch_npu_flex.py::test_flex_attention_forward_and_dynamic_backward_lower_by_default",
    ),
    layer="fix",
    why=(
        "torch_npu 2.9.0.post9's own flex lowering hands short queries to torch's create_flex_decoding_kernel "
        "without the FLOAT32_PRECISION option torch 2.9's lowering sets first (kernel/flex/flex_attention.py: "
        "kernel_options.setdefault('FLOAT32_PRECISION', get_float32_precision())); torch's decoding template reads "
        "it in every tl.dot, so the kernel reads an undefined name and cannot compile. The option gets torch's "
        "default where torch_npu's call leaves it out"
    ),
    upstream="torch_npu 2.9.0.post9 _inductor/kernel/flex_attention.py flex_attention (its call at line 1461); the "
    "other releases build their own decoding kernel or keep torch's lowering; report text in docs/torch-npu-reports.md",
    remove_when="every torch_npu release in use sets FLOAT32_PRECISION before torch's decoding kernel (the probe then "
    "says not needed)",
    patches_package="torch_npu",
    changes=(Change(DECODING_KERNEL, _with_float32_precision, optional=True),),
    upstream_has_fix=_decoding_gets_float32_precision,
)


# ------------------------------------------------------------------ torch 2.14's reduction-epilogue fusion question
COMBINED_SCHEDULING = torch_npu_names.qualname("combined-scheduling")
EPILOGUE = f"{COMBINED_SCHEDULING}.can_fuse_reduction_epilogue"
NV_GEMM = "_nv_universal_gemm_scheduling"


def _no_nv_gemm_epilogue(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch's answer for a scheduling without NV universal GEMM templates (cuda_combined_scheduling.py: False unless
    node1 is one); torch's own code runs where the attribute it reads is there."""

    @wraps_original(original)
    def can_fuse_reduction_epilogue(self: Any, *args: Any, **kwargs: Any) -> Any:
        if NV_GEMM not in vars(self):
            return False
        return original(self, *args, **kwargs)

    return can_fuse_reduction_epilogue


def _init_sets_what_torch_reads() -> bool:
    """Whether torch_npu's NPUCombinedScheduling.__init__ sets the attribute torch's inherited method reads (or calls
    the CUDA scheduling's own __init__, which does), read from the installed source."""
    import inspect

    cls = torch_npu_names.first_defined("combined-scheduling")
    init = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    text = ast.unparse(init)
    return NV_GEMM in text or "super().__init__" in text or "CUDACombinedScheduling.__init__" in text


EPILOGUE_WITHOUT_NV_GEMM = Patch(
    id="torch-npu-combined-scheduling-epilogue",
    proven_by=(
        "tests/tools/wheel/test_torch_npu_flex.py::test_without_the_record_flex_attentions_forward_fails_with_the_releases_bug",
        "tests/tools/wheel/test_torch_npu_flex.py::test_flex_attention_forward_and_dynamic_backward_lower_by_default",
    ),
    layer="fix",
    why=(
        "torch 2.14 asks every scheduling whether a reduction can fuse into a template's epilogue; its CUDA "
        "combined scheduling answers from _nv_universal_gemm_scheduling, which its __init__ sets. torch_npu 2.14.0's "
        "NPUCombinedScheduling inherits that method but runs only BaseScheduling.__init__, so the attribute is "
        "missing and the first template with a reduction after it (flex attention's forward) fails the compile "
        "with AttributeError. With no such templates on npu, the answer is torch's own for them: False"
    ),
    upstream=(
        "torch_npu 2.14.0 _inductor/codegen/npu_combined_scheduling.py NPUCombinedScheduling.__init__; torch 2.14.0 "
        "codegen/cuda_combined_scheduling.py can_fuse_reduction_epilogue; report text in docs/torch-npu-reports.md"
    ),
    remove_when="torch_npu sets what torch's combined scheduling reads (the probe then says not needed)",
    patches_package="torch_npu",
    changes=(Change(EPILOGUE, _no_nv_gemm_epilogue, optional=True),),
    upstream_has_fix=_init_sets_what_torch_reads,
)

FIXES = (DECODING_FLOAT32_PRECISION, EPILOGUE_WITHOUT_NV_GEMM)
# create_flex_decoding_kernel: the device's split (flex_decoding_split.py) applies first, this record over it
AFTER = ("flex_decoding_split",)


def line_fixes(adapters: LineAdapters) -> tuple[Patch, ...]:
    """This module's records for a line: torch's flex lowerings kept (with the line's adapters), then the fixes."""
    return (flex_lowerings_kept(adapters), *FIXES)
