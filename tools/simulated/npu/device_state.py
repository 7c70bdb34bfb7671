"""Whether the simulated NPU is set up in this process (its loaded extension), and the lock its state changes under.

The device API's functions set it up on first use through :func:`ensure`, as torch_npu's lazy init does."""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

__all__ = ["DEVICE", "DEVICE_COUNT", "MARK", "SimulatedNpu", "ensure", "instance", "lock", "set_instance", "set_up_by"]

DEVICE = "npu"
DEVICE_COUNT = 2  # device_ext.cpp kDeviceCount: two devices with one synchronous stream each (raw handle 0)
MARK = "_npu_inductor_compat_simulated"  # set on the torch.npu module device.py registers

lock = threading.RLock()
_instance: SimulatedNpu | None = None
# device.setup, registered by device.py when it is imported: it builds torch.npu from the device API's modules,
# which therefore cannot import it themselves
_setup: Callable[[], SimulatedNpu] | None = None


class SimulatedNpu:
    """What ``device.setup`` returns: the loaded extension and how it was obtained."""

    def __init__(
        self, torch_version: str, build_seconds: float, reused: bool, extension: Any, build_directory: str
    ) -> None:
        self.torch_version = torch_version
        self.build_seconds = build_seconds  # seconds spent finding or building the library (its import excluded)
        self.reused = reused  # True when a build from an earlier process was loaded as it was
        self.extension = extension
        self.build_directory = build_directory
        self.device_module: types.ModuleType | None = None

    def __repr__(self) -> str:
        how = "reused" if self.reused else "built"
        return f"SimulatedNpu(torch {self.torch_version}, {how} in {self.build_seconds:.1f} s, {self.build_directory})"


def instance() -> SimulatedNpu | None:
    """The device set up in this process, None before."""
    return _instance


def set_instance(found: SimulatedNpu) -> None:
    """Record the device ``device.setup`` set up (or found set up by another copy of device.py)."""
    global _instance
    with lock:
        _instance = found


def set_up_by(setup: Callable[[], SimulatedNpu]) -> None:
    """Make :func:`ensure` set the device up with ``setup`` (device.py passes its ``setup``)."""
    global _setup
    _setup = setup


def ensure() -> SimulatedNpu:
    """The device set up in this process, set up now if it is not yet."""
    found = _instance
    if found is not None:
        return found
    if _setup is None:
        raise RuntimeError(
            "npu_inductor_compat: the simulated NPU is not set up, and nothing can set it up: import "
            "npu_inductor_compat.tools.simulated.npu.device (its setup() sets the device up)"
        )
    return _setup()
