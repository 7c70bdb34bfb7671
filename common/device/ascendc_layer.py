"""The ascendc layer: "npu" GPU-like for lowering's device selection only, and the backend's hook on
should_partition, as journal records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.providers import DeviceProvider
from npu_inductor_compat.common.device.layer_shared import DEVICE
from npu_inductor_compat.patching import Change, Patch, wraps_original


def _lowering_is_gpu_with_npu(original: Callable[[str], bool]) -> Callable[[str], bool]:
    @wraps_original(original)
    def is_gpu(device: str) -> bool:
        return device == DEVICE or original(device)

    return is_gpu


def _lowering_treats_npu_as_gpu() -> bool:
    from torch._inductor import lowering

    return bool(lowering.is_gpu(DEVICE))


def _should_partition_with_backend_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def should_partition(self: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        device = node.get_device()
        if device is not None:
            hook = getattr(self.get_backend(device), "scheduler_should_partition_override", None)
            if hook is not None:
                return hook(self, node, original)
        return original(self, node, *args, **kwargs)

    return should_partition


def ascendc_layer(provider: DeviceProvider, adapters: LineAdapters) -> tuple[Patch, ...]:
    return (
        Patch(
            id="ascendc-lowering-gpu-like",
            layer="ascendc",
            why=(
                "lowering picks the output device of pointwise ops by is_gpu(); 'npu' must win over CPU inputs, but "
                "must stay out of GPU_TYPES, where the scheduler would demand Triton, which ascendc does not use"
            ),
            upstream=(
                "torch_npu _inductor/ascendc/__init__.py _patch_inductor_lowering_device_selection "
                "(PR 40264 review point P2)"
            ),
            remove_when="Inductor asks the device interface whether a device is GPU-like (2.15 DeviceInterface.is_gpu)",
            changes=(Change("torch._inductor.lowering:is_gpu", _lowering_is_gpu_with_npu),),
            upstream_has_fix=_lowering_treats_npu_as_gpu,
        ),
        Patch(
            id="ascendc-should-partition-hook",
            layer="ascendc",
            why=(
                "aclgraph capture/replay needs npu nodes partitioned like GPU nodes; the backend decides through "
                "scheduler_should_partition_override(scheduler, node, orig_fn)"
            ),
            upstream="torch_npu _inductor/ascendc/__init__.py _should_partition (PR 40264)",
            remove_when="Inductor offers a per-backend partition hook",
            changes=(
                Change("torch._inductor.scheduler:Scheduler.should_partition", _should_partition_with_backend_hook),
            ),
        ),
    )
