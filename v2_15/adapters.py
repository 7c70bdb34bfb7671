"""torch 2.15.x's answers to the questions common's shared records ask (common/composition/adapters.py)."""

# What makes 2.15 its own line (read off the 2.15.0 wheel): ``DEVICE_TO_ATEN`` is gone (the C++ wrapper calls
# ``device_to_aten()``, which asks the device's op overrides), and the cpp_wrapper two-pass check asks the device
# (``_uses_gpu_cpp_wrapper``) instead of listing ("cuda", "xpu").

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common.composition import option
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.device import device_layer, triton_layers
from npu_inductor_compat.common.fixes import cpp_wrapper_launch
from npu_inductor_compat.patching import Change


def _device_to_aten_changes(function_wrapper: Callable[[Any], Any]) -> tuple[Change, ...]:
    # the C++ wrapper imported device_to_aten by name: patch that name first, so it wraps upstream's function
    return tuple(
        Change(f"torch._inductor.codegen.{module}:device_to_aten", function_wrapper)
        for module in ("cpp_wrapper_cpu", "cpp_utils")
    )


def _op_overrides_name_npu_aten_type() -> bool:
    """device_to_aten() asks the device's op overrides for aten_device_type(); the "npu" overrides (a
    CUDADeviceOpOverrides subclass) inherit "at::kCUDA" unless they answer themselves."""
    from npu_inductor_compat.common.device.npu_codegen import NpuDeviceOpOverrides

    try:
        return bool(NpuDeviceOpOverrides("").aten_device_type() == device_layer.ATEN_DEVICE)
    except NotImplementedError:
        return False


def _two_pass_asks_the_device() -> bool:
    """The check asks _uses_gpu_cpp_wrapper (inside a generator expression: a nested code object holds the name)."""
    code = triton_layers.upstream_two_pass_code()
    codes = [code, *(c for c in code.co_consts if isinstance(c, types.CodeType))]
    return any("_uses_gpu_cpp_wrapper" in c.co_names for c in codes)


ADAPTERS = LineAdapters(
    line="v2_15",
    new_config_entry=option.config_entry_named,
    config_changed=option.config_memo_contextvars_dirty,
    before_op_overrides=lambda: None,
    device_to_aten_changes=_device_to_aten_changes,
    device_to_aten_known=_op_overrides_name_npu_aten_type,
    two_pass_knows_npu=_two_pass_asks_the_device,
    benchmarker_routes_npu=triton_layers.benchmarker_registry_has_npu,
    npu_benchmark=triton_layers.benchmark_with_device_type,
    # 2.14 moved the registry to heuristics/registry.py; this module re-exports it, and importing it (its package)
    # registers torch's own template heuristics, which importing heuristics/registry.py alone does not
    template_heuristic_registry="torch._inductor.heuristics.template.registry",
    cpp_wrapper_class=cpp_wrapper_launch.npu_cpp_wrapper_split_includes,
    flex_lowerings="torch._inductor.kernel.flex.flex_attention",
    cpp_wrapper_changes=(cpp_wrapper_launch.PRECOMPILED_HEADER_CHANGE,),
)
