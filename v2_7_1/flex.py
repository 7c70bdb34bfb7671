"""Flex attention on torch 2.7.x-2.8.x for non-CUDA devices: the symbolic backward grid and device-aware configs."""

# Nothing here imports torch until a record is probed or applied.

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from npu_inductor_compat.common.flex import (
    CUDA_QUERY_CHANGES,
    asking_the_device,
    asks_cuda,
    cuda_queries_answered_by,
    import_after_lowering,
)
from npu_inductor_compat.patching import Change, Patch, wraps_original

# torch 2.7/2.8 keep flex in ``torch/_inductor/kernel/flex_attention.py``.
FLEX_MODULE = "torch._inductor.kernel.flex_attention"  # torch 2.7.x-2.8.x
FLEX_MODULES = (FLEX_MODULE, "torch._inductor.kernel.flex.flex_attention")  # 2.9 moved it
CHOICES = "torch._inductor.choices:InductorChoices"
ISSUE_4431 = "torch_npu issue 4431; fixed on torch_npu's v2.7.1 branch only (_inductor/kernel/flex_attention.py)"


def _flex_module() -> ModuleType | None:
    for name in FLEX_MODULES:
        module = import_after_lowering(name)
        if module is not None:
            return module
    return None


# ------------------------------------------------------------------------------------ symbolic backward grid
def flex_backward_grid_2_7(
    batch_size: Any,
    q_heads: Any,
    num_queries: Any,
    d_model: Any,
    kv_heads: Any,
    num_key_value: Any,
    meta: Any,
    *,
    cdiv: Any,
) -> tuple[Any, Any, Any]:
    """torch 2.7's backward grid, written with an injected ``cdiv`` so it can be printed as a C++ expression.

    The 2.7/2.8 kernel reads ``off_hz = tl.program_id(2)``: the layout must stay (…, 1, batch * kv_heads). torch 2.9's
    symbolic grid is (…, batch, kv_heads) for a kernel that reads program ids differently: never mix them.
    """
    return (
        cdiv(num_queries, meta["BLOCK_M2"]) * (q_heads // kv_heads) + cdiv(num_key_value, meta["BLOCK_N1"]),
        1,
        batch_size * kv_heads,
    )


def _symbolic_grid(_old: Any) -> Any:
    from torch._inductor.select_algorithm import SymbolicGridFn

    return SymbolicGridFn(flex_backward_grid_2_7)


def backward_grid_is_symbolic() -> bool:
    """Feature detection: the backward template's grid already prints as C++ (torch >= 2.9 ships that)."""
    from torch._inductor.select_algorithm import SymbolicGridFn

    module = _flex_module()
    template = getattr(module, "flex_attention_backward_template", None)
    return template is not None and isinstance(template.grid, SymbolicGridFn)


# Checked in torch_npu's wheels: 2.7.1.post11 sets the same symbolic grid on upstream's backward template, and every
# grid of its own ``NPUTritonTemplate``s (``kernel/flexattention_template.py``: in-loop, compact, sparse-mask, dq and
# dkdv grids) is already a SymbolicGridFn, so nothing of torch_npu's needs covering; 2.9.0.post9's own flex templates
# use SymbolicGridFn grids too, and 2.12.0.post3 ships no flex code.
SYMBOLIC_BACKWARD_GRID = Patch(
    id="flex-backward-symbolic-grid",
    proven_by=(
        "tests/lines/test_flex_grid.py::test_without_the_fix_the_backward_fails_with_the_symbolic_grid_assertion",
        "tests/lines/test_flex_grid.py::test_with_the_fix_every_flex_graph_gets_a_cpp_wrapper_with_a_symbolic_backward_grid",
    ),
    layer="fix",
    why=(
        "with cpp_wrapper=True and dynamic shapes Inductor must print the flex backward grid as C++; a plain grid "
        "function stops the backward with 'cpp_wrapper requires SymbolicGridFn'"
    ),
    upstream=ISSUE_4431,
    remove_when="MIN_SUPPORTED >= (2, 9): torch's own backward grid is a SymbolicGridFn",
    lines=("v2_7_1",),
    # The template keeps the grid it was built with: setting the module-level function would change nothing.
    changes=(Change(f"{FLEX_MODULE}:flex_attention_backward_template.grid", _symbolic_grid),),
    upstream_has_fix=backward_grid_is_symbolic,
)


# ------------------------------------------------------------------------------- configs from the device itself
def _heuristics_ask_cuda() -> bool:
    """Whether 2.8's flex config heuristics ask CUDA's compute capability (see the comment below)."""
    # COMPAT(>= 2.8): flex configs come from ``V.choices.get_flex_attention_*_configs(head_dim, dtype)``, whose
    # device defaults to "cuda" (the 2.8 lowering passes none), i.e. from CUDAConfigHeuristic's compute capability.
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [tag]: the kernel/flex/ lowering passes its device; this folder goes.
    heuristics = importlib.import_module("torch._inductor.template_heuristics")
    found = getattr(getattr(heuristics, "CUDAConfigHeuristic", None), "get_flex_attn_fwd_configs", None)
    return found is not None and "get_device_capability" in found.__code__.co_names


def configs_ask_cuda() -> bool:
    """True when this torch's flex configs query torch.cuda whatever the device: 2.7's _get_nv_config, or 2.8's
    config heuristics reached without a device from the old-path flex lowering (2.9 moved it and passes one)."""
    if asks_cuda(FLEX_MODULE, "_get_nv_config", "get_device_capability"):
        return True
    return import_after_lowering(FLEX_MODULE) is not None and _heuristics_ask_cuda()


def _device_being_lowered() -> str | None:
    """The device type of the inputs of the FX node Inductor is lowering (None outside lowering)."""
    from torch._inductor.virtualized import V

    node = getattr(V.graph, "current_node", None)
    for arg in getattr(node, "all_input_nodes", ()):
        device = getattr(arg.meta.get("val"), "device", None)
        if device is not None:
            return str(device.type)
    return None


def choices_asking_the_device(original: Any) -> Any:
    """An InductorChoices flex-config method that answers torch.cuda's queries for the device being lowered."""

    @wraps_original(original)
    def configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        device_type = _device_being_lowered()
        if device_type in (None, "cuda", "cpu"):
            return original(self, *args, **kwargs)
        with cuda_queries_answered_by(device_type):
            return original(self, *args, **kwargs)

    return configs


CONFIGS_FROM_DEVICE = Patch(
    id="flex-configs-from-device",
    proven_by=("tests/lines/test_flex_grid.py::test_without_the_configs_record_torch_2_7s_flex_asks_cuda_and_fails",),
    layer="fix",
    why=(
        "torch 2.7/2.8 pick flex block sizes from torch.cuda's compute capability and SM count for every device: "
        "lowering flex for an NPU fails where there is no CUDA"
    ),
    upstream=(
        "torch 2.7.1 kernel/flex_attention.py _get_nv_config, kernel/flex_decoding.py get_split_k; torch 2.8.0 "
        "template_heuristics.py CUDAConfigHeuristic.get_flex_*_configs (the lowering passes no device)"
    ),
    remove_when="MIN_SUPPORTED >= (2, 9): configs come from per-device template heuristics",
    lines=("v2_7_1",),
    changes=(
        # torch 2.7: the lowering calls these module functions by name
        Change(f"{FLEX_MODULE}:_get_default_config_fwd", asking_the_device, optional=True),
        Change(f"{FLEX_MODULE}:_get_default_config_bwd", asking_the_device, optional=True),
        # torch 2.8: the lowering asks V.choices, without a device
        Change(f"{CHOICES}.get_flex_attention_fwd_configs", choices_asking_the_device, optional=True),
        Change(f"{CHOICES}.get_flex_attention_bwd_configs", choices_asking_the_device, optional=True),
        # flex_attention imported it by name; decoding also asks for the SM count (get_split_k)
        Change(f"{FLEX_MODULE}:create_flex_decoding_kernel", asking_the_device),
        *CUDA_QUERY_CHANGES,
    ),
    upstream_has_fix=lambda: not configs_ask_cuda(),
)

FIXES = (CONFIGS_FROM_DEVICE, SYMBOLIC_BACKWARD_GRID)
