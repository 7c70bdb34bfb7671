"""Dynamo/Inductor's runtime view of the simulated NPU: :data:`SimulatedNpuInterface`, a ``DeviceInterface`` for "npu".

It subclasses a torch._dynamo class, so it is created on first access: importing this module imports no Dynamo."""

# This module does not register it: the device layer does (register_interface_for_device("npu", ...)), and the
# device providers hand it over (device_provider.py).

from __future__ import annotations

from typing import Any

from npu_inductor_compat.tools.simulated.npu import device_api as api
from npu_inductor_compat.tools.simulated.npu import device_memory as memory
from npu_inductor_compat.tools.simulated.npu import device_state
from npu_inductor_compat.tools.simulated.npu import device_streams as streams
from npu_inductor_compat.tools.simulated.npu.device_properties import SimulatedNpuProperties, current_soc
from npu_inductor_compat.tools.simulated.npu.device_state import DEVICE

__all__ = ["SimulatedNpuInterface"]

_interface: type | None = None
SimulatedNpuInterface: type  # created on first access by __getattr__ below (no value here, on purpose)


def _make_interface() -> type:
    from torch._dynamo import device_interface as di

    class SimulatedNpuInterface(di.DeviceInterface):  # type: ignore[misc]
        """Dynamo/Inductor's runtime view of the simulated "npu" device (the selected Ascend SoC, one stream)."""

        device = api.device
        Event = streams.Event
        Stream = streams.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                di.caching_worker_current_devices[DEVICE] = api.index_of(device)

            @staticmethod
            def current_device() -> int:
                return int(di.caching_worker_current_devices.get(DEVICE, api.current_device()))

            @staticmethod
            def get_device_properties(device: Any = None) -> SimulatedNpuProperties:
                return api.get_device_properties(device)

        current_device = staticmethod(api.current_device)
        set_device = staticmethod(api.set_device)
        maybe_exchange_device = staticmethod(api._maybe_exchange_device)
        exchange_device = staticmethod(api._exchange_device)
        device_count = staticmethod(api.device_count)
        is_available = staticmethod(api.is_available)
        stream = staticmethod(streams.stream)
        current_stream = staticmethod(streams.current_stream)
        set_stream = staticmethod(streams.set_stream)
        _set_stream_by_id = staticmethod(streams._set_stream_by_id)
        get_raw_stream = staticmethod(api._get_current_raw_stream)
        synchronize = staticmethod(api.synchronize)
        get_device_properties = staticmethod(api.get_device_properties)  # type: ignore[assignment]
        is_bf16_supported = staticmethod(api.is_bf16_supported)
        memory_allocated = staticmethod(memory.memory_allocated)

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            # torch_npu/utils/_dynamo_device.py NpuInterface.get_compute_capability: "only return the chip model",
            # i.e. the SoC name; Inductor stores it as DeviceProperties.cc (torch's XPU interface does the same).
            return api.get_device_name(device)

        @classmethod
        def get_multi_processor_count(cls, device: Any = None) -> int:  # asked from torch 2.15 on
            # torch_npu/utils/_dynamo_device.py (2.14): get_multi_processor_count is the vector core count
            return int(api.get_device_properties(device).vector_core_num)

        @classmethod
        def get_cache_system_info(cls) -> dict[str, object] | None:  # asked from torch 2.15 on
            # torch_npu/utils/_dynamo_device.py (2.14) keys the code cache by the device name (and CANN version)
            return {"name": current_soc().name, "simulated": True}

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:  # asked from torch 2.9 on
            return True

    SimulatedNpuInterface.__module__ = __name__
    SimulatedNpuInterface.__qualname__ = "SimulatedNpuInterface"
    return SimulatedNpuInterface


def __getattr__(name: str) -> Any:
    global _interface
    if name == "SimulatedNpuInterface":
        with device_state.lock:
            if _interface is None:
                _interface = _make_interface()
        return _interface
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
