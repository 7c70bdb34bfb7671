"""torch 2.12.x-2.14.x's answers to the questions common's shared records ask (common/composition/adapters.py)."""

from __future__ import annotations

import inspect
import sys
from typing import Any

from npu_inductor_compat.common.composition import option
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.device import device_layer, template_heuristics, triton_layers
from npu_inductor_compat.common.fixes import cpp_wrapper_launch


def _config_changed() -> None:
    """The config memo flags are ContextVars from 2.13 (checked in 2.13.0 and 2.14.1); 2.12.1 has ``_is_dirty``."""
    # COMPAT(>= 2.13): the config memo flags became ContextVars.
    # CAN REMOVE when MIN_SUPPORTED >= (2, 13) [block]: 2.12 has the plain flag
    config = sys.modules.get(option.CONFIG_MODULE)
    if config is not None and not hasattr(config, "_hash_dirty_var"):
        option.config_memo_flag_dirty()
        return
    # END CAN REMOVE
    option.config_memo_contextvars_dirty()


def _npu_benchmark(self: Any, fn: Any, *, warmup: Any, rep: Any, **kwargs: Any) -> Any:
    """benchmark_gpu naming the NPU where it takes ``device_type`` (2.13+; 2.12.1's does not)."""
    # COMPAT(>= 2.13): InductorBenchmarker.benchmark_gpu takes ``device_type``.
    # CAN REMOVE when MIN_SUPPORTED >= (2, 13) [block]: 2.12's takes no device
    if "device_type" not in inspect.signature(self.benchmark_gpu).parameters:
        return triton_layers.benchmark_without_device_type(self, fn, warmup=warmup, rep=rep, **kwargs)
    # END CAN REMOVE
    return triton_layers.benchmark_with_device_type(self, fn, warmup=warmup, rep=rep, **kwargs)


ADAPTERS = LineAdapters(
    line="v2_12",
    new_config_entry=option.config_entry_named,
    config_changed=_config_changed,
    # from 2.12 the built-in op overrides load behind upstream's own initialisation flag
    before_op_overrides=lambda: None,
    device_to_aten_changes=device_layer.device_to_aten_table_changes,
    device_to_aten_known=device_layer.device_to_aten_table_has_npu,
    two_pass_knows_npu=triton_layers.two_pass_list_has_npu,
    benchmarker_routes_npu=triton_layers.benchmarker_registry_has_npu,
    npu_benchmark=_npu_benchmark,
    # 2.12 and 2.13 keep the registry here; 2.14 moved it to heuristics/registry.py and keeps this name as an alias
    # of heuristics/template/registry.py, which re-exports it (2.14.1 template_heuristics/__init__.py)
    template_heuristic_registry=template_heuristics.FIRST_REGISTRY_MODULE,
    cpp_wrapper_class=cpp_wrapper_launch.npu_cpp_wrapper_split_includes,
    flex_lowerings="torch._inductor.kernel.flex.flex_attention",
    cpp_wrapper_changes=(cpp_wrapper_launch.PRECOMPILED_HEADER_CHANGE,),
)
