"""torch 2.7.x-2.8.x's answers to the questions common's shared records ask (common/composition/adapters.py)."""

from __future__ import annotations

from npu_inductor_compat.common.composition import option
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.device import device_layer, triton_layers
from npu_inductor_compat.common.fixes import cpp_wrapper_launch

ADAPTERS = LineAdapters(
    line="v2_7_1",
    new_config_entry=option.config_entry_unnamed,
    config_changed=option.config_memo_flag_dirty,
    before_op_overrides=device_layer.load_builtin_op_overrides,
    device_to_aten_changes=device_layer.device_to_aten_table_changes,
    device_to_aten_known=device_layer.device_to_aten_table_has_npu,
    two_pass_knows_npu=triton_layers.two_pass_list_has_npu,
    benchmarker_routes_npu=triton_layers.benchmarking_before_the_registry,
    npu_benchmark=triton_layers.benchmark_without_device_type,
    template_heuristic_registry=None,  # no registry before 2.9: GEMM configs come from get_config_heuristics
    cpp_wrapper_class=cpp_wrapper_launch.npu_cpp_wrapper,
    flex_lowerings="torch._inductor.kernel.flex_attention",
    # no precompiled cpp_wrapper header on this line
    cpp_wrapper_changes=(),
)
