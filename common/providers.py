"""Device providers: who plays the device's part for Inductor's "npu" (torch_npu on hardware, a simulation in tests).

A provider supplies the dynamo DeviceInterface for "npu" and the line of Python that generated wrappers use to get
the raw stream; the layers in this package do the Inductor side. torch_npu is only looked up (never imported) until
a layer actually needs its classes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.patching import Patch


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
    # torch_npu 2.7.1.post11, 2.9.0.post9 and 2.12.0.post3 all define it here (checked in their wheels).
    module: Any = importlib.import_module("torch_npu.utils._dynamo_device")
    interface: type = module.NpuInterface
    return interface


# Where released torch_npu wheels define their triton-backend codegen classes, newest layout first
# (2.12.0.post3: codegen/scheduling.py, codegen/cpp_wrapper.py; 2.9.0.post9 and 2.7.1.post11: the others).
_TORCH_NPU_CODEGEN = (
    (
        "torch_npu._inductor.codegen.scheduling:NPUTritonScheduling",
        "torch_npu._inductor.codegen.npu_combined_scheduling:NPUCombinedScheduling",
    ),
    (
        "torch_npu._inductor.codegen.wrapper:NPUWrapperCodeGen",
        "torch_npu._inductor.codegen.wrapper:NPUPythonWrapperCodeGen",
    ),
    (
        "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
        "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
    ),
)


def _first_defined(candidates: tuple[str, ...]) -> type:
    problems = []
    for candidate in candidates:
        module_name, _, name = candidate.partition(":")
        try:
            found: type = getattr(importlib.import_module(module_name), name)
            return found
        except (ImportError, AttributeError) as err:
            problems.append(f"{candidate}: {err}")
    raise ImportError("torch_npu provides none of the expected classes: " + "; ".join(problems))


def _torch_npu_codegen_classes() -> tuple[type, type, type | None]:
    scheduling, wrapper, cpp_wrapper = (_first_defined(role) for role in _TORCH_NPU_CODEGEN)
    return scheduling, wrapper, cpp_wrapper


TORCH_NPU = DeviceProvider(
    name="torch_npu",
    device_interface=_torch_npu_interface,
    # defined in torch_npu/_inductor/utils.py by every released line (the package re-exports it only on some)
    raw_stream_import="from torch_npu._inductor.utils import get_current_raw_stream as {name}",
    summary="the real Ascend device (torch_npu + CANN)",
    codegen_classes=_torch_npu_codegen_classes,
)

_lock = threading.Lock()
_override: DeviceProvider | None = None


def set_provider(provider: DeviceProvider | None) -> DeviceProvider | None:
    """Use ``provider`` instead of torch_npu (None: back to torch_npu); returns the previous override."""
    global _override
    with _lock:
        previous, _override = _override, provider
        return previous


def torch_npu_installed() -> bool:
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        return False


SIMULATED_MARK = "_npu_inductor_compat_simulated"  # set on the torch.npu module the simulated NPU registers


def simulated_npu_set_up() -> bool:
    npu = getattr(sys.modules.get("torch"), "npu", None)
    return bool(getattr(npu, SIMULATED_MARK, False))


def active_provider() -> DeviceProvider | None:
    """The provider set with set_provider(), else the simulated NPU if it is set up in this process, else torch_npu
    when installed, else None."""
    with _lock:
        if _override is not None:
            return _override
    if simulated_npu_set_up():
        from npu_inductor_compat.common.simulated.device import PROVIDER

        return PROVIDER
    return TORCH_NPU if torch_npu_installed() else None
