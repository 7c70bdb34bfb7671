"""Device providers: who plays the device's part for Inductor's "npu" (torch_npu on hardware, a simulation in tests)."""

# A provider supplies the dynamo DeviceInterface for "npu" and the line of Python that generated wrappers use to get
# the raw stream; the layers in this package do the Inductor side. torch_npu is only looked up (never imported) until
# a layer actually needs its classes.

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Patch
from npu_inductor_compat.targets import Target


@dataclass(frozen=True)
class DeviceProvider:
    name: str
    # The dynamo DeviceInterface subclass for "npu" (called lazily, when the device layer is applied).
    device_interface: Callable[[], type]
    # Python source the generated wrapper uses to bind the raw-stream getter to ``{name}``.
    raw_stream_import: str
    summary: str = ""
    # (scheduling, Python wrapper, C++ wrapper) classes for the triton backend; None: this package's own.
    codegen_classes: Callable[[], tuple[type, type, type | None]] | None = None
    # Journal records this provider itself needs (applied right after the device layer, undone with it).
    records: Callable[[], tuple[Patch, ...]] = tuple


def _torch_npu_interface() -> type:
    interface: type = torch_npu_names.first_defined("device-interface")
    return interface


def _torch_npu_codegen_classes() -> tuple[type, type, type | None]:
    roles = ("scheduling", "python-wrapper", "cpp-wrapper")
    scheduling, wrapper, cpp_wrapper = (torch_npu_names.first_defined(role) for role in roles)
    return scheduling, wrapper, cpp_wrapper


_RAW_STREAM = Target.parse(torch_npu_names.qualname("raw-stream"))

TORCH_NPU = DeviceProvider(
    name="torch_npu",
    device_interface=_torch_npu_interface,
    # defined in torch_npu/_inductor/utils.py by every released line (the package re-exports it only on some)
    raw_stream_import=f"from {_RAW_STREAM.module} import {_RAW_STREAM.qualname} as {{name}}",
    summary="the real Ascend device (torch_npu + CANN)",
    codegen_classes=_torch_npu_codegen_classes,
)


def torch_npu_installed() -> bool:
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class _Registered:
    provider: DeviceProvider
    # True while this provider plays "npu" in this process (e.g. a simulated device that has been set up).
    present: Callable[[], bool]


class ProviderRegistry:
    """Who plays "npu": an explicit override, else the first registered provider that is present, else torch_npu
    when installed. Tools register their providers here; runtime code never looks for them by module name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._override: DeviceProvider | None = None
        self._registered: dict[str, _Registered] = {}

    def register(self, provider: DeviceProvider, present: Callable[[], bool]) -> None:
        with self._lock:
            self._registered[provider.name] = _Registered(provider, present)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._registered.pop(name, None)

    def set_override(self, provider: DeviceProvider | None) -> DeviceProvider | None:
        with self._lock:
            previous, self._override = self._override, provider
            return previous

    def active(self) -> DeviceProvider | None:
        with self._lock:
            if self._override is not None:
                return self._override
            registered = list(self._registered.values())
        for entry in registered:
            if entry.present():
                return entry.provider
        return TORCH_NPU if torch_npu_installed() else None


REGISTRY = ProviderRegistry()


def set_provider(provider: DeviceProvider | None) -> DeviceProvider | None:
    """Use ``provider`` instead of the detected one (None: back to detection); returns the previous override."""
    return REGISTRY.set_override(provider)


def register_provider(provider: DeviceProvider, present: Callable[[], bool]) -> None:
    """Make ``provider`` play "npu" whenever ``present()`` is true (checked at each activation)."""
    REGISTRY.register(provider, present)


def active_provider() -> DeviceProvider | None:
    """The override, else the first registered provider that is present, else torch_npu when installed, else None."""
    return REGISTRY.active()
