"""The device layer (every backend): "npu" device op overrides, DEVICE_TO_ATEN, the dynamo device interface,
flex_attention's device check and the lazy-backward guard, as journal records; lines differ through the adapters."""

from __future__ import annotations

# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: only load_builtin_op_overrides imports with it
import importlib
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.providers import DeviceProvider
from npu_inductor_compat.common.device.layer_shared import (
    CODEGEN_COMMON,
    DEVICE,
    PR_40264,
    same_wrapper_for_every_consumer,
)
from npu_inductor_compat.common.device.lazy_backward import RECORD as LAZY_BACKWARD_RECORD
from npu_inductor_compat.patching import Change, Patch, wraps_original


def _register_op_overrides(provider: DeviceProvider, adapters: LineAdapters) -> Callable[[Any], Any]:
    def register(register_device_op_overrides: Any) -> None:
        from npu_inductor_compat.common.device.npu_codegen import NpuDeviceOpOverrides

        adapters.before_op_overrides()
        register_device_op_overrides(DEVICE, NpuDeviceOpOverrides(provider.raw_stream_import))

    return register


def _has_op_overrides() -> bool:
    from torch._inductor.codegen import common

    return DEVICE in common.device_op_overrides_dict


# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: for load_builtin_op_overrides
# Modules whose import registers upstream's built-in device op overrides (mtia from torch 2.9).
BUILTIN_OP_OVERRIDES = (
    "torch._inductor.codegen.cpu_device_op_overrides",
    "torch._inductor.codegen.mps_device_op_overrides",
    "torch._inductor.codegen.cuda.device_op_overrides",
    "torch._inductor.codegen.xpu.device_op_overrides",
    "torch._inductor.codegen.mtia.device_op_overrides",
)


# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: the lines up to 2.11 (v2_7_1, v2_9)
def load_builtin_op_overrides() -> None:
    """For lines up to 2.11 (adapter ``before_op_overrides``): get_device_op_overrides imports the built-in
    overrides only while the registry is empty, so once anything (npu, or an early import of cuda's module) is
    registered, cpu look-ups fail with KeyError. Import them all before registering "npu". From 2.12 they load
    behind an initialisation flag and the lines do nothing."""
    for module in BUILTIN_OP_OVERRIDES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            continue


ATEN_DEVICE = "at::kPrivateUse1"


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: DEVICE_TO_ATEN is gone from 2.15
def device_to_aten_table_has_npu() -> bool:
    """Lines up to 2.14: cpp_utils.DEVICE_TO_ATEN maps device types to ATen names."""
    from torch._inductor.codegen import cpp_utils

    return DEVICE in cpp_utils.DEVICE_TO_ATEN


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: DEVICE_TO_ATEN is gone from 2.15
def device_to_aten_table_changes(_function_wrapper: Callable[[Any], Any]) -> tuple[Change, ...]:
    from npu_inductor_compat.patching import constant  # here, so it goes with the function

    return (
        Change(
            "torch._inductor.codegen.cpp_utils:DEVICE_TO_ATEN",
            constant(ATEN_DEVICE),
            kind="dict_item",
            key=DEVICE,
            must_exist=False,
        ),
    )


def _npu_device_to_aten(original: Callable[[str], str]) -> Callable[[str], str]:
    @wraps_original(original)
    def device_to_aten(device_type: str) -> str:
        return ATEN_DEVICE if device_type == DEVICE else original(device_type)

    return device_to_aten


def _has_interface() -> bool:
    from torch._dynamo import device_interface

    return DEVICE in device_interface.device_interfaces


def _flex_accepts_npu(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def _validate_device(query: Any, key: Any, value: Any) -> Any:
        if query.device.type == DEVICE:
            return None
        return original(query, key, value)

    return _validate_device


def device_layer(provider: DeviceProvider, adapters: LineAdapters) -> tuple[Patch, ...]:
    device_to_aten = same_wrapper_for_every_consumer(_npu_device_to_aten)
    return (
        Patch(
            id="npu-device-op-overrides",
            layer="device",
            why="Inductor's wrappers ask the device op overrides how to get the raw stream and guard the device",
            upstream=f"register_device_op_overrides_npu in {PR_40264}",
            remove_when="torch_npu registers its overrides through torch's PrivateUse1 backend hook",
            changes=(
                Change(
                    f"{CODEGEN_COMMON}:register_device_op_overrides",
                    _register_op_overrides(provider, adapters),
                    kind="registration",
                    key=DEVICE,
                    touches=(f"{CODEGEN_COMMON}:device_op_overrides_dict",),
                ),
            ),
            upstream_has_fix=_has_op_overrides,
        ),
        Patch(
            id="npu-device-to-aten",
            layer="device",
            why=(
                "the C++ wrapper names the device's ATen type: 'npu not found in DEVICE_TO_ATEN' (torch <= 2.14), "
                "or at::kCUDA from the CUDA-derived npu op overrides (2.15 device_to_aten)"
            ),
            upstream="torch/_inductor/codegen/cpp_utils.py DEVICE_TO_ATEN (<= 2.14), device_to_aten() (2.15)",
            remove_when="MIN_SUPPORTED >= (2, 15) and the npu op overrides answer aten_device_type()",
            changes=adapters.device_to_aten_changes(device_to_aten),
            upstream_has_fix=adapters.device_to_aten_known,
        ),
        Patch(
            id="npu-device-interface",
            layer="device",
            why="dynamo and Inductor ask the device interface for streams, properties and availability",
            upstream="torch_npu utils/_dynamo.py _dynamo_register_interface_for_device",
            remove_when="never: the interface comes from the device provider",
            changes=(
                Change(
                    "torch._dynamo.device_interface:register_interface_for_device",
                    lambda register: register(DEVICE, provider.device_interface()),
                    kind="registration",
                    key=DEVICE,
                    touches=("torch._dynamo.device_interface:device_interfaces",),
                ),
            ),
            upstream_has_fix=_has_interface,
        ),
        Patch(
            id="npu-flex-attention-device",
            layer="device",
            why="flex_attention rejects every device but cuda/cpu/xpu/hpu before Inductor sees the graph",
            upstream="torch/nn/attention/flex_attention.py _validate_device; torch_npu 2.9 no-ops it",
            remove_when="upstream flex_attention accepts PrivateUse1 devices",
            changes=(Change("torch.nn.attention.flex_attention:_validate_device", _flex_accepts_npu),),
        ),
        LAZY_BACKWARD_RECORD,
    )
