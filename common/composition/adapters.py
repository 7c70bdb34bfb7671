"""The typed interface between common's shared mechanisms and the running torch line."""

# ``common`` never imports a version module. Each version module (the composition root) builds one `LineAdapters`
# with its own answers and hands it to common's record builders (`common.composition.compose`). A field exists here
# only where torch lines really differ for a shared record; a difference inside one line stays a probe in that line's
# module, with its compat tag and removal plan.

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.patching import Change


@dataclass(frozen=True)
class LineAdapters:
    """One torch line's answers to the questions common's records ask."""

    line: str
    # npu-backend-option: a ``torch.utils._config_module._ConfigEntry`` for a new option (default, value type, name).
    new_config_entry: Callable[[Any, type, str], Any]
    # npu-backend-option refresh: invalidate the config module's memoised hash and option dict after the option
    # is added or removed (the memo's shape differs per line).
    config_changed: Callable[[], None]
    # npu-device-op-overrides: run just before "npu" is registered (lines whose registry loads the built-in
    # overrides only while it is empty load them here).
    before_op_overrides: Callable[[], None]
    # npu-device-to-aten: the changes that make the C++ wrapper name at::kPrivateUse1 for "npu", given the wrapper
    # factory for a device_to_aten function, and whether upstream already answers it.
    device_to_aten_changes: Callable[[Callable[[Any], Any]], tuple[Change, ...]]
    device_to_aten_known: Callable[[], bool]
    # triton-cpp-wrapper-two-pass: whether upstream's two-pass cpp_wrapper check already includes "npu".
    two_pass_knows_npu: Callable[[], bool]
    # triton-benchmarker-npu: whether upstream's benchmarking already reaches benchmark_gpu for "npu", and the
    # benchmark function registered for "npu" where it does not.
    benchmarker_routes_npu: Callable[[], bool]
    npu_benchmark: Callable[..., Any]
    # triton-template-heuristics-npu: the module holding Inductor's template heuristic registry
    # (register_template_heuristic, _TEMPLATE_HEURISTIC_REGISTRY, _HEURISTIC_CACHE; importing it registers torch's
    # own heuristics), or None on a line without one.
    template_heuristic_registry: str | None
    # cpp-wrapper-workspace-locks: this line's NPU C++ wrapper class (imports Inductor when called), and the extra
    # changes the line needs for it (e.g. the precompiled wrapper header, torch >= 2.9).
    cpp_wrapper_class: Callable[[], type]
    # torch-npu-flex-lowerings-kept: the module defining torch's flex_attention and flex_attention_backward lowerings
    flex_lowerings: str
    cpp_wrapper_changes: tuple[Change, ...] = ()
