"""The one table of torch_npu names this package hooks or calls, with the layouts each release uses."""

# Providers, layers, the launch and the survey all read their torch_npu names from here, so a rename in a torch_npu
# release is one edit, and the survey (``tools/torch_npu_survey/survey.py``) checks every released wheel against exactly
# these names. Importing this module imports nothing of torch or torch_npu.

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat import targets
from npu_inductor_compat.targets import Target


@dataclass(frozen=True)
class Call:
    """How this package calls a hooked function: positional arguments after self, and keyword names."""

    positional: int = 0
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hook:
    """A torch_npu name this package relies on; present when any candidate exists (with ``call``'s signature)."""

    id: str
    # "torch_npu.module" or "torch_npu.module:Qual.name", newest layout first
    candidates: tuple[str, ...]
    used_by: str
    call: Call | None = None


TORCH_NPU_HOOKS: tuple[Hook, ...] = (
    Hook(
        "device-interface",
        ("torch_npu.utils._dynamo_device:NpuInterface",),
        "common/composition/providers.py TORCH_NPU.device_interface (the dynamo interface for 'npu')",
    ),
    Hook(
        "raw-stream",
        ("torch_npu._inductor.utils:get_current_raw_stream",),
        "common/composition/providers.py TORCH_NPU.raw_stream_import (generated Python wrappers import it)",
        Call(positional=1),
    ),
    Hook(
        "scheduling",
        (
            "torch_npu._inductor.codegen.scheduling:NPUTritonScheduling",
            "torch_npu._inductor.codegen.npu_combined_scheduling:NPUCombinedScheduling",
        ),
        "common/composition/providers.py TORCH_NPU.codegen_classes (triton backend registration)",
    ),
    Hook(
        "python-wrapper",
        (
            "torch_npu._inductor.codegen.wrapper:NPUWrapperCodeGen",
            "torch_npu._inductor.codegen.wrapper:NPUPythonWrapperCodeGen",
        ),
        "common/composition/providers.py TORCH_NPU.codegen_classes (triton backend registration)",
    ),
    Hook(
        "cpp-wrapper",
        (
            "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
            "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
        ),
        "common/composition/providers.py TORCH_NPU.codegen_classes; replaced by fix cpp-wrapper-workspace-locks",
    ),
    Hook(
        "autotuner-save-kernel",
        (
            "torch_npu._inductor.npu_triton_heuristics:NPUCachingAutotuner.save_gpu_kernel",
            "torch_npu._inductor.runtime.triton_heuristics:NPUCachingAutotuner.save_gpu_kernel",
        ),
        "common/fixes/cpp_wrapper_launch.py autotuner-kernel-metadata: Inductor calls save_gpu_kernel(stream, "
        "launcher)",
        Call(positional=2),
    ),
    Hook(
        "triton-support-ffts",
        ("torch_npu._inductor.utils:triton_support_ffts",),
        "common/device/npu_cpp_wrapper.py: whether kernels take the FFTS sync address (absent: they do, as the "
        "wrapper of releases without it, e.g. 2.12.0.post3, always passes it)",
        Call(positional=0),
    ),
    Hook(
        "mlir-plugin",
        ("torch_npu._inductor.ascend_npu_ir.ascend_npu_ir.npu.npu_inductor_plugin:register_mlir_codegen_backend",),
        "common/composition/provider_loaders.py mlir-provider-loader and dvm-provider-loader call it with no arguments",
        Call(positional=0),
    ),
    Hook(
        "mlir-package",
        ("torch_npu._inductor.ascend_npu_ir",),
        "common/composition/backends.py: the mlir backend's requirement",
    ),
    Hook("dvm-package", ("torch_npu._inductor.dvm",), "common/composition/backends.py: the dvm backend's requirement"),
    Hook(
        "dvm-fusion",
        ("torch_npu._inductor.dvm.mlir_fusion",),
        "common/composition/provider_loaders.py dvm-provider-loader imports it",
    ),
    Hook(
        "ascendc-package",
        ("torch_npu._inductor.ascendc",),
        "common/composition/backends.py and provider_loaders.py ascendc-provider-loader import it",
    ),
    Hook(
        "ascendc-partition-override",
        ("torch_npu._inductor.ascendc.npu:NPUScheduling.scheduler_should_partition_override",),
        "common/device/ascendc_layer.py ascendc-should-partition-hook calls it (scheduler, node, orig_fn) when the "
        "backend has it",
        Call(positional=3),
    ),
    Hook(
        "runtime-triton-helpers",
        ("torch_npu._inductor.runtime.triton_helpers",),
        "tools/simulated/kernels/torch_npu_bridges.py: the TTIR worker binds `extension` in it where triton-ascend "
        "3.2.0 has "
        "no tl.extra.cann (the 2.7.1.post11 and 2.9.0.post9 kernels import it from there); tools/simulated/"
        "wheel_records.py torch-npu-wheel-helpers-extension does the same in the codegen process; common/"
        "torch_npu_backports.py torch-npu-looped-argreduce-index's probe reads its max_with_index/min_with_index",
    ),
    Hook(
        "grid-expr-npu",
        (
            "torch_npu._inductor.npu_triton_heuristics:GridExprNpu.from_meta_and_set_numel",
            "torch_npu._inductor.runtime.triton_heuristics:GridExprNpu.from_meta_and_set_numel",
        ),
        "common/device/npu_cpp_wrapper.py: the C++ grid of a torch_npu kernel (grid_type GridNpu & co, which torch's "
        "heuristics do not define), as torch_npu's own C++ wrapper builds it",
        Call(positional=4),
    ),
    Hook(
        "autotuner-candidate-plan",
        ("torch_npu._inductor.runtime.triton_heuristics:build_candidate_plan",),
        "tools/simulated/wheel/torch_npu_wheel.py: the C++ wrapper's launch params are saved for the first "
        "runtime-block "
        "candidate of its plan, as torch_npu's autotuner chooses one (absent in 2.12.0.post3: no runtime blocks)",
        Call(positional=2),
    ),
    Hook(
        "index-kernel-codegen",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.codegen_kernel",),
        "common/fixes/torch_npu_backports.py torch-npu-looped-argreduce-index wraps it (its kernels' argmax/argmin "
        "calls)",
    ),
    Hook(
        "no-linear-kernel-codegen",
        ("torch_npu._inductor.codegen.triton:NPUTritonKernel.codegen_kernel",),
        "common/fixes/torch_npu_backports.py torch-npu-looped-argreduce-index wraps it where it exists (the no_linear "
        "fallback's kernel)",
    ),
    Hook(
        "no-linear-loop-kernel-codegen",
        ("torch_npu._inductor.codegen.triton:NPUTritonKernelWithLoop.codegen_kernel",),
        "common/fixes/torch_npu_backports.py torch-npu-looped-argreduce-index wraps it where it exists (the no_linear "
        "fallback's looped kernel)",
    ),
    Hook(
        "index-kernel-load",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.load",),
        "common/fixes/torch_npu_load_order.py torch-npu-masked-load-permute-order wraps it (where its permute goes); "
        "common/fixes/torch_npu_constant_load.py torch-npu-constant-load-reshape wraps it and its probe reads its "
        "source",
    ),
    Hook(
        "index-kernel-store",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.store",),
        "common/fixes/torch_npu_store.py torch-npu-persistent-reduction-store wraps it (the store lines it writes) and "
        "its "
        "probe reads its source",
    ),
    Hook(
        "flex-decoding-kernel",
        ("torch_npu._inductor.kernel.flex_attention:create_flex_decoding_kernel",),
        "common/flex.py flex-decoding-split-from-device wraps it: torch's function, which torch_npu's own flex "
        "lowering imported by name (2.9.0.post9)",
    ),
    Hook(
        "combined-scheduling",
        ("torch_npu._inductor.codegen.npu_combined_scheduling:NPUCombinedScheduling",),
        "common/fixes/torch_npu_flex_lowering.py torch-npu-combined-scheduling-epilogue answers its inherited "
        "can_fuse_reduction_epilogue and its probe reads its __init__",
    ),
    Hook(
        "scheduling-define-kernel",
        ("torch_npu._inductor.codegen.scheduling:NPUTritonScheduling.define_kernel",),
        "common/fixes/torch_npu_flex_lowering.py torch-npu-flex-lowerings-kept calls it (src_code, node_schedule, "
        "kernel, traced_graph_hash) where torch's template codegen passes no hash; "
        "common/fixes/torch_npu_template_libdevice.py torch-npu-template-libdevice wraps it for template kernels",
        Call(positional=4),
    ),
    Hook(
        "index-kernel-ext-imports",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.gen_triton_ext_imports",),
        "common/fixes/torch_npu_template_libdevice.py torch-npu-template-libdevice takes its libdevice import for "
        "template kernels (a static method, called with no arguments)",
    ),
    Hook(
        "index-kernel-store-reduction",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.store_reduction",),
        "common/fixes/torch_npu_store.py torch-npu-persistent-reduction-store wraps it as it wraps store",
    ),
    Hook(
        "index-kernel-configs",
        ("torch_npu._inductor.npu_triton_heuristics:triton_config_npu_index",),
        "common/fixes/torch_npu_long_rows.py torch-npu-long-rows-tiles wraps it and its probe calls it (size_hints, "
        "meta) "
        "(absent where the heuristics use FastATileGenerator: 2.7.1.post11's line)",
        Call(positional=2),
    ),
    Hook(
        "tile-generator",
        ("torch_npu._inductor.codegen.tile_generator:TileGenerator",),
        "common/fixes/torch_npu_long_rows.py torch-npu-long-rows-tiles builds its configs with it (its alignment, tile "
        "limit and de-duplication)",
    ),
    Hook(
        "tile-generator-last-split-blocks",
        ("torch_npu._inductor.codegen.tile_generator:TileGenerator.calcu_last_split_blocks",),
        "common/fixes/torch_npu_split_blocks.py torch-npu-split-blocks-past-cores wraps it and its probe calls it "
        "(axis)",
        Call(positional=1),
    ),
    Hook(
        "split-tiling-axes",
        ("torch_npu._inductor.codegen.split_tiling:SplitTiling.select_tiling_axis",),
        "common/fixes/torch_npu_tiling.py torch-npu-two-reduction-tiling wraps it (which axes of a kernel are tiled) "
        "and "
        "its probe reads its source",
        Call(positional=0),
    ),
    Hook(
        "index-kernel-filter-masks",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.filter_masks",),
        "common/fixes/torch_npu_backports.py torch-npu-masked-load-size-symbols wraps it and its probe calls it "
        "(mask_vars, index_vars) on the releases whose filter_masks takes index_vars",
    ),
    Hook(
        "index-kernel-persistent-reduction",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.should_use_persistent_reduction",),
        "common/fixes/torch_npu_backports.py torch-npu-persistent-reduction-ub wraps it and its probe calls it (absent "
        "where "
        "the index kernel leaves the decision to torch's choices, 2.12.0.post3)",
        Call(positional=0),
    ),
    Hook(
        "index-kernel-split-ranges",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel._split_iteration_ranges",),
        "common/fixes/torch_npu_split_ranges.py torch-npu-split-symbolic-sizes replaces it and both records' probes "
        "call it "
        "(groups, lengths)",
        Call(positional=2),
    ),
    Hook(
        "index-kernel-range-tree",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.initialize_range_tree",),
        "common/fixes/torch_npu_hint_numels.py torch-npu-numels-pinned wraps it (pins the numels' symbols first) and "
        "its "
        "probe calls it (pid_cache) on a stand-in kernel",
        Call(positional=1),
    ),
    Hook(
        "index-kernel-set-ranges",
        ("torch_npu._inductor.codegen.triton:NPUIndexTritonKernel.split_and_set_ranges",),
        "common/fixes/torch_npu_hint_numels.py torch-npu-numels-pinned wraps it (the node's sizes with the pin "
        "applied)",
        Call(positional=1),
    ),
    Hook(
        "index-kernel-cant-split",
        ("torch_npu._inductor.codegen.triton:CantSplit",),
        "common/fixes/torch_npu_split_ranges.py torch-npu-cant-split-arguments binds a CantSplit constructible bare "
        "there",
    ),
    Hook(
        "index-overrides-masked",
        ("torch_npu._inductor.codegen.triton:NPUTritonKernelOverrides.masked",),
        "common/fixes/torch_npu_unfixed.py torch-npu-masked-subblock-size-symbols wraps it and its probe calls it "
        "(mask, body, other) (absent where torch_npu keeps torch's masked: 2.12.0.post3)",
        Call(positional=3),
    ),
    Hook(
        "npu-config-ascend950",
        ("torch_npu._inductor.config:is_ascend950",),
        "common/fixes/torch_npu_backports.py torch-npu-persistent-reduction-ub reads it (the SoC is an Ascend950)",
    ),
)

HOOKS: dict[str, Hook] = {hook.id: hook for hook in TORCH_NPU_HOOKS}


def candidates(hook_id: str) -> tuple[str, ...]:
    """The candidate names of one hook (KeyError naming the valid ids for a typo)."""
    try:
        return HOOKS[hook_id].candidates
    except KeyError:
        raise KeyError(f"no torch_npu hook {hook_id!r}; known: {', '.join(HOOKS)}") from None


def module_of(hook_id: str) -> str:
    """The module of a hook that names a module (or the module part of its only candidate)."""
    (candidate,) = candidates(hook_id)
    return Target.parse(candidate, attribute=False).module


def qualname(hook_id: str) -> str:
    """``module:Qual.name`` of a hook with a single candidate."""
    (candidate,) = candidates(hook_id)
    return candidate


def first_defined(hook_id: str) -> Any:
    """Import the first candidate of ``hook_id`` that exists; ImportError listing every candidate tried."""
    problems = []
    for candidate in candidates(hook_id):
        try:
            return targets.resolve(candidate)
        except (ImportError, AttributeError) as err:
            problems.append(f"{candidate}: {err}")
    raise ImportError(f"torch_npu provides no {hook_id} ({'; '.join(problems)})")


def as_written(hook_id: str) -> Any:
    """The installed object a single-candidate hook names, as torch_npu wrote it: any wrapper of ours unwrapped (each
    keeps what it replaces as ``__wrapped__``), a static method as its function. For probes that run or read it."""
    return inspect.unwrap(targets.resolve(qualname(hook_id)))


def source_tree(hook_id: str) -> ast.Module:
    """The syntax tree of the installed code a single-candidate hook names, as torch_npu wrote it: for probes that
    read which form of a statement a release writes."""
    return ast.parse(textwrap.dedent(inspect.getsource(as_written(hook_id))))
