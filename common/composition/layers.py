"""The layers by name (the config and device layers apply on every backend; a backend names its others) and every
layer record id. The families live in device_layer, triton_layers, ascendc_layer and provider_loaders."""

from __future__ import annotations

from collections.abc import Callable

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.option import PER_COMPILE_RECORD, option_record
from npu_inductor_compat.common.composition.provider_loaders import PROVIDER_LOADERS
from npu_inductor_compat.common.composition.providers import DeviceProvider
from npu_inductor_compat.common.device.ascendc_layer import ascendc_layer
from npu_inductor_compat.common.device.device_layer import device_layer
from npu_inductor_compat.common.device.triton_layers import triton_family_layer, triton_registration_layer
from npu_inductor_compat.patching import Patch


def config_layer(adapters: LineAdapters) -> tuple[Patch, ...]:
    return (option_record(adapters), PER_COMPILE_RECORD)


Layer = Callable[[DeviceProvider, LineAdapters], tuple[Patch, ...]]


def _loader_layer(record: Patch) -> Layer:
    def layer(_provider: DeviceProvider, _adapters: LineAdapters) -> tuple[Patch, ...]:
        return (record,)

    return layer


LAYERS: dict[str, Layer] = {
    "triton-family": triton_family_layer,
    "triton-registration": triton_registration_layer,
    "ascendc": ascendc_layer,
    **{f"{name}-loader": _loader_layer(record) for name, record in PROVIDER_LOADERS.items()},
}


def all_layer_ids(adapters: LineAdapters) -> frozenset[str]:
    """Every layer record id, for validating NPU_INDUCTOR_COMPAT_DISABLE (builds records, applies nothing)."""
    from npu_inductor_compat.common.composition.providers import TORCH_NPU

    ids = {record.id for record in config_layer(adapters) + device_layer(TORCH_NPU, adapters)}
    for build in LAYERS.values():
        ids.update(record.id for record in build(TORCH_NPU, adapters))
    return frozenset(ids)
