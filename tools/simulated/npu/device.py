"""A simulated NPU for machines without one: PyTorch's PrivateUse1 backend renamed "npu", on host memory, so that
scripts run with ``device="npu"`` and Inductor generates code for "npu" (nothing is launched). :func:`setup` builds
and loads ``device_ext.cpp`` and registers ``torch.npu``: the device API's modules (device_*.py) and its switches."""

# Importing this module imports ``torch`` only (no ``torch._dynamo``, no ``torch._inductor``) and builds nothing.

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from npu_inductor_compat.tools.simulated.npu import (
    device_api,
    device_interface,
    device_memory,
    device_options,
    device_random,
    device_state,
    device_streams,
    extension_build,
)
from npu_inductor_compat.tools.simulated.npu.device_api import cpu_fallback_counts
from npu_inductor_compat.tools.simulated.npu.device_options import set_option, simulated_options
from npu_inductor_compat.tools.simulated.npu.device_properties import SimulatedNpuProperties, current_soc, use_soc
from npu_inductor_compat.tools.simulated.npu.device_provider import PROVIDER
from npu_inductor_compat.tools.simulated.npu.device_state import DEVICE, MARK, SimulatedNpu

__all__ = [
    "DEVICE",
    "PROVIDER",
    "SimulatedNpu",
    "SimulatedNpuInterface",
    "SimulatedNpuProperties",
    "cpu_fallback_counts",
    "current_soc",
    "setup",
    "simulated_options",
    "use_soc",
]

# Every operator runs on CPU through the extension's CPU fallback.
EXTENSION_SOURCE = Path(__file__).with_name("device_ext.cpp")
_DEFAULT_PRIVATEUSE1_NAME = "privateuseone"
_renamed_here = False  # PrivateUse1 renamed by this module (a setup that failed after the rename may be retried)
SimulatedNpuInterface: type  # device_interface's, created on first access (see __getattr__ below)


# ------------------------------------------------------------------------------------------------ setup
def setup(verbose: bool = False) -> SimulatedNpu:
    """Make ``device="npu"`` work in this process (idempotent, thread-safe); return the :class:`SimulatedNpu`.

    Raises RuntimeError, changing nothing, when PrivateUse1 already belongs to another backend (a different
    name, or "npu" registered by someone else, such as torch_npu).
    """
    global _renamed_here
    with device_state.lock:
        found = device_state.instance()
        if found is not None:
            return found
        existing = _registered_elsewhere()
        if existing is not None:
            device_state.set_instance(existing)
            return existing
        _check_privateuse1_free()
        instance = _load_extension(verbose)
        if torch._C._get_privateuse1_backend_name() != DEVICE:
            torch.utils.rename_privateuse1_backend(DEVICE)
            _renamed_here = True
        module = _device_module(instance)
        torch._register_device_module(DEVICE, module)
        instance.device_module = module
        if not hasattr(torch.Tensor, f"is_{DEVICE}"):  # Tensor.npu() / Tensor.is_npu
            torch.utils.generate_methods_for_privateuse1_backend()
        device_state.set_instance(instance)
        return instance


def _registered_elsewhere() -> SimulatedNpu | None:
    """The instance of another copy of this module (same file imported twice) that already set the device up."""
    module = getattr(torch, DEVICE, None)
    if module is not None and getattr(module, MARK, False):
        instance: SimulatedNpu = module._simulated_npu
        return instance
    return None


def _check_privateuse1_free() -> None:
    name = torch._C._get_privateuse1_backend_name()
    if name not in (_DEFAULT_PRIVATEUSE1_NAME, DEVICE):
        raise RuntimeError(
            f"npu_inductor_compat: cannot set up the simulated NPU device: PyTorch's PrivateUse1 backend is "
            f"already renamed to {name!r} by another backend in this process"
        )
    module = getattr(torch, DEVICE, None)
    if module is not None:
        raise RuntimeError(
            f"npu_inductor_compat: cannot set up the simulated NPU device: torch.{DEVICE} is already registered "
            f"({module!r}), by torch_npu or another backend"
        )
    if name == DEVICE and not _renamed_here:
        raise RuntimeError(
            f"npu_inductor_compat: cannot set up the simulated NPU device: PyTorch's PrivateUse1 backend is already "
            f"renamed to {DEVICE!r} by another backend in this process (torch_npu?)"
        )


def _load_extension(verbose: bool) -> SimulatedNpu:
    def note(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    version = torch.__version__
    extension, built = extension_build.load(EXTENSION_SOURCE, ("-O1",), verbose, note)
    if built.reused:
        note(f"reusing the simulated NPU device extension for torch {version} ({built.seconds:.1f} s, {built.folder})")
    else:
        note(f"built the simulated NPU device extension for torch {version} in {built.seconds:.1f} s")
    return SimulatedNpu(version, built.seconds, built.reused, extension, str(built.folder))


# ------------------------------------------------------------------------------------------------ torch.npu
class _Switches:
    """An object whose attributes are torch_npu options (torch_npu/npu/npu_config.py _npuConfig, _allowHF32Matmul,
    _allowHF32Conv): setting one records its option; reading answers from the record (or the value torch_npu reads
    while unset), or raises AttributeError where torch_npu's attribute can only be set."""

    _path: str
    _switches: dict[str, tuple[str, bool | None]]

    def __init__(self, path: str, options: Mapping[str, tuple[str, bool | None]]) -> None:
        # attribute -> (option name, value while unset; None: torch_npu cannot read it)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_switches", dict(options))

    def __setattr__(self, name: str, value: Any) -> None:
        option = self._switches.get(name)
        if option is None:
            raise _not_simulated(f"{self._path}.{name}", name)
        if not isinstance(value, bool):
            raise TypeError(f"{self._path}.{name} must be a bool, got {type(value).__name__}")
        set_option({option[0]: "enable" if value else "disable"})

    def __getattr__(self, name: str) -> bool:
        if (name.startswith("__") and name.endswith("__")) or name in ("_path", "_switches"):
            raise AttributeError(name, name=name)
        option = self._switches.get(name)
        if option is None:
            raise _not_simulated(f"{self._path}.{name}", name)
        key, unset = option
        if unset is None:  # torch_npu's config attributes can be set only
            raise AttributeError(f"{self._path}.{name} can be set but not read (as in torch_npu)", name=name)
        value = device_options.recorded(key)
        return unset if value is None else value == "enable"

    def __repr__(self) -> str:
        return f"<simulated {self._path}: {', '.join(self._switches)}>"


config = _Switches(f"torch.{DEVICE}.config", {"allow_internal_format": ("ALLOW_INTERNAL_FORMAT", None)})
matmul = _Switches(f"torch.{DEVICE}.matmul", {"allow_hf32": ("ALLOW_MATMUL_HF32", False)})
conv = _Switches(f"torch.{DEVICE}.conv", {"allow_hf32": ("ALLOW_CONV_HF32", True)})


# The stand-in tells the script's asks from this package's by the frames between them: this file's are skipped
# (standin.py _DEVICE_FILE), so what raises NotSimulated for torch.npu stays here.
def _not_simulated(name: str, attribute: str) -> AttributeError:
    from npu_inductor_compat.tools.simulated.npu import not_simulated

    return not_simulated.attribute_error(name, attribute)


def _missing_from_device_module(name: str) -> Any:
    """``torch.npu.<name>`` for a name the simulated NPU does not have: standin.NotSimulated (an AttributeError, so
    hasattr and getattr with a default still answer), naming it."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"module 'torch.{DEVICE}' has no attribute {name!r}", name=name)
    raise _not_simulated(f"torch.{DEVICE}.{name}", name)


_DEVICE_API = (
    *device_api.API,
    *device_memory.API,
    *device_options.API,
    *device_random.API,
    *device_streams.API,
)


def _device_module(instance: SimulatedNpu) -> types.ModuleType:
    """The ``torch.npu`` module: the device API's functions under torch's name for it; a name it lacks raises
    ``standin.NotSimulated`` (an AttributeError) naming it."""
    module = types.ModuleType(f"torch.{DEVICE}", "Simulated NPU device module (npu_inductor_compat).")
    for item in _DEVICE_API:
        setattr(module, item.__name__, item)
    for name, value in (("config", config), ("matmul", matmul), ("conv", conv)):
        setattr(module, name, value)
    module.SimulatedNpuProperties = SimulatedNpuProperties  # type: ignore[attr-defined]
    module.__getattr__ = _missing_from_device_module  # type: ignore[method-assign]
    # A package with no location: ``import torch_npu.npu.<name>`` reaches the stand-in's finder (standin.py)
    module.__path__ = []
    setattr(module, MARK, True)
    module._simulated_npu = instance  # type: ignore[attr-defined]
    return module


def __getattr__(name: str) -> Any:
    if name == "SimulatedNpuInterface":  # subclasses a torch._dynamo class: built on first access, not at import
        return device_interface.SimulatedNpuInterface
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


device_state.set_up_by(setup)  # the device API's functions set the device up on first use
