"""A simulated NPU device for machines without an NPU or torch_npu.

PyTorch's PrivateUse1 backend, renamed "npu" and backed by host (CPU) memory, so that real PyTorch code runs with
``device="npu"`` tensors (every operator executes on CPU through the dispatcher's CPU fallback), and so that
``torch.compile``'s Inductor can generate code for device "npu" on a CPU-only machine (codegen only: nothing is
launched on a device). It is a test and development tool, not an accelerator.

- :func:`setup` builds (once per torch build and source: :mod:`.extension_build`) and loads the C++ part,
  ``device_ext.cpp`` beside this file (allocator, a few kernels, CPU fallback, device/stream guard, PrivateUse1 hooks,
  raw-stream getter),
  then renames PrivateUse1 to "npu", registers ``torch.npu`` and generates ``Tensor.npu()`` / ``Tensor.is_npu``.
- :data:`SimulatedNpuInterface` is a ``torch._dynamo.device_interface.DeviceInterface`` for "npu". This module does
  not register it (the device layer does, with ``register_interface_for_device("npu", SimulatedNpuInterface)``).
  It is created on first access, so importing this module imports ``torch`` only (no ``torch._dynamo``, no
  ``torch._inductor``) and builds nothing.

Two devices with one synchronous stream each (raw handle 0). Random numbers come from the CPU default generator,
which the simulated device reports as its own: ``torch.npu.manual_seed`` seeds the CPU generator.

The device reports a real Ascend SoC (:mod:`.soc`; :func:`use_soc` selects it, default ``soc.DEFAULT_SOC``) the way
torch_npu does: ``torch.npu.get_device_properties()`` has torch_npu's fields, with ``multi_processor_count`` the
vector core count and the CUDA-only fields (``major``, ``warp_size``, ...) None, and the dynamo interface's compute
capability is the SoC name; so whatever Inductor derives from the "SM count" follows the SoC as on hardware.
``torch.npu`` also has torch_npu's memory queries, ``set_compile_mode``, ``set_option``, ``config``, ``matmul`` and
``conv`` (options are recorded, see :func:`simulated_options`, and change nothing); any other name raises
``standin.NotSimulated`` (an AttributeError) naming it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import threading
import types
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from npu_inductor_compat.common.providers import DeviceProvider, register_provider
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated import extension_build
from npu_inductor_compat.tools.simulated.soc import DEFAULT_SOC, Soc, get_soc

__all__ = [
    "DEVICE",
    "PROVIDER",
    "SimulatedNpu",
    "SimulatedNpuInterface",
    "SimulatedNpuProperties",
    "current_soc",
    "setup",
    "simulated_options",
    "use_soc",
]

DEVICE = "npu"
DEVICE_COUNT = 2  # device_ext.cpp kDeviceCount
EXTENSION_SOURCE = Path(__file__).with_name("device_ext.cpp")
_DEFAULT_PRIVATEUSE1_NAME = "privateuseone"
_MARK = "_npu_inductor_compat_simulated"  # set on the torch.npu module this file registers

_lock = threading.RLock()
_instance: SimulatedNpu | None = None
_renamed_here = False  # PrivateUse1 renamed by this module (a setup that failed after the rename may be retried)


@dataclasses.dataclass(frozen=True)
class SimulatedUuid:
    """torch_npu's ``_CUuuid``: 16 bytes, printed 8-4-4-4-12. torch_npu leaves it zero where the runtime cannot
    report one (torch_npu/csrc/npu/Module.cpp, ``aclrtUuid uuid = {0}``); the simulated device has none."""

    bytes: tuple[int, ...] = (0,) * 16

    def __str__(self) -> str:
        text = "".join(f"{b:02x}" for b in self.bytes)
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclasses.dataclass(frozen=True)
class SimulatedNpuProperties:
    """What ``torch.npu.get_device_properties()`` returns on the simulated NPU: exactly the fields of torch_npu's
    ``_NPUDeviceProperties`` (torch_npu/csrc/npu/Module.cpp ``RegisterNPUDeviceProperties``), valued as torch_npu
    values them (``initDeviceProperty``) for the selected SoC.

    torch_npu sets ``multi_processor_count`` to the vector core count (the cube core count when there are no vector
    cores) and leaves every other CUDA-shaped field unset (``std::optional``: None in Python): there is no CUDA
    compute capability, warp size, register file or thread limit to report. Inductor reads those with fallbacks
    (a None ``warp_size`` counts as 32, None register counts skip its occupancy check).
    """

    name: str
    total_memory: int
    cube_core_num: int
    vector_core_num: int
    L2_cache_size: int
    multi_processor_count: int
    major: int | None = None
    minor: int | None = None
    is_multi_gpu_board: int | None = None
    is_integrated: int | None = None
    max_threads_per_multi_processor: int | None = None
    warp_size: int | None = None
    regs_per_multiprocessor: int | None = None
    gcnArchName: str | None = None
    uuid: SimulatedUuid = dataclasses.field(default_factory=SimulatedUuid)

    @classmethod
    def of(cls, soc: Soc) -> SimulatedNpuProperties:
        # torch_npu/csrc/npu/Module.cpp initDeviceProperty: multi_processor_count = vector_core_num when > 0, else
        # cube_core_num ("for compatibility with DataParallel balance check"); torch_npu/_inductor/runtime/hints.py
        # NPUDeviceProperties.create likewise gives Inductor vector_core_num as the SM count.
        count = soc.vector_core_num if soc.vector_core_num > 0 else soc.cube_core_num
        return cls(
            name=soc.name,
            total_memory=soc.total_memory,
            cube_core_num=soc.cube_core_num,
            vector_core_num=soc.vector_core_num,
            L2_cache_size=soc.l2_cache_size,
            multi_processor_count=count,
        )

    def __repr__(self) -> str:  # torch_npu's layout (sizes in MB), named as what it is
        return (
            f"SimulatedNpuProperties(name={self.name!r}, total_memory={self.total_memory // 1024**2}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, uuid={self.uuid}, "
            f"L2_cache_size={self.L2_cache_size // 1024**2}MB)"
        )


_soc: Soc = get_soc(DEFAULT_SOC)
_properties: dict[str, SimulatedNpuProperties] = {}


def use_soc(name: str) -> str:
    """Make the simulated NPU report the Ascend SoC ``name`` (see ``soc.SOCS``; ValueError naming the valid ones);
    returns the name of the SoC it reported before.

    Select it before compiling: graphs already compiled keep the properties they were generated with. A switch
    clears Inductor's cache of device properties (``DeviceProperties.create``) so the next graph sees the new SoC.
    """
    global _soc
    chosen = get_soc(name)
    with _lock:
        previous, _soc = _soc, chosen
    if previous is not chosen:
        hints = sys.modules.get("torch._inductor.runtime.hints")
        create = getattr(getattr(hints, "DeviceProperties", None), "create", None)
        if create is not None and hasattr(create, "cache_clear"):
            create.cache_clear()
    return previous.name


def current_soc() -> Soc:
    """The Ascend SoC the simulated NPU reports."""
    return _soc


def _current_properties() -> SimulatedNpuProperties:
    soc = _soc
    found = _properties.get(soc.name)
    if found is None:
        found = _properties.setdefault(soc.name, SimulatedNpuProperties.of(soc))
    return found


class SimulatedNpu:
    """What :func:`setup` returns: the loaded extension and how it was obtained."""

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


# ------------------------------------------------------------------------------------------------ setup
def setup(verbose: bool = False) -> SimulatedNpu:
    """Make ``device="npu"`` work in this process (idempotent, thread-safe); return the :class:`SimulatedNpu`.

    Raises RuntimeError, changing nothing, when PrivateUse1 already belongs to another backend (a different
    name, or "npu" registered by someone else, such as torch_npu).
    """
    global _instance, _renamed_here
    with _lock:
        if _instance is not None:
            return _instance
        existing = _registered_elsewhere()
        if existing is not None:
            _instance = existing
            return existing
        _check_privateuse1_free()
        instance = _load_extension(verbose)
        if torch._C._get_privateuse1_backend_name() != DEVICE:
            torch.utils.rename_privateuse1_backend(DEVICE)
            _renamed_here = True
        module = _device_module(instance)
        torch._register_device_module(DEVICE, module)
        instance.device_module = module
        if not hasattr(torch.Tensor, f"is_{DEVICE}"):
            torch.utils.generate_methods_for_privateuse1_backend()
        _instance = instance
        return instance


def _registered_elsewhere() -> SimulatedNpu | None:
    """The instance of another copy of this module (same file imported twice) that already set the device up."""
    module = getattr(torch, DEVICE, None)
    if module is not None and getattr(module, _MARK, False):
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


def _ensure() -> SimulatedNpu:
    return _instance if _instance is not None else setup()


# ------------------------------------------------------------------------------------------------ device API
def _device_index(device: Any = None, *, optional: bool = True) -> int:
    """Index of an "npu" device given as None (the current one), an int, "npu" / "npu:N", or a torch.device."""
    if device is None:
        if not optional:
            raise ValueError("npu_inductor_compat: a device is required")
        return current_device()
    index: int | None
    if isinstance(device, torch.device):
        if device.type != DEVICE:
            raise ValueError(f"npu_inductor_compat: expected an {DEVICE} device, got {device}")
        index = device.index
    elif isinstance(device, str):
        kind, _, number = device.partition(":")
        if kind != DEVICE:
            raise ValueError(f"npu_inductor_compat: expected an {DEVICE} device, got {device!r}")
        index = int(number) if number else None
    elif isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        raise TypeError(f"npu_inductor_compat: cannot read a device index from {device!r}")
    if index is None or index == -1:
        return current_device()
    if not 0 <= index < DEVICE_COUNT:
        raise ValueError(
            f"npu_inductor_compat: invalid {DEVICE} device index {index} (the simulated NPU has {DEVICE_COUNT})"
        )
    return index


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _instance is not None


def _lazy_init() -> None:
    _ensure()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return DEVICE_COUNT


def current_device() -> int:
    return int(_ensure().extension.current_device())


def set_device(device: Any) -> None:
    _ensure().extension.set_device(_device_index(device, optional=False))


def _exchange_device(device: int) -> int:
    previous = current_device()
    if device >= 0:
        set_device(device)
    return previous


def _maybe_exchange_device(device: int) -> int:
    return _exchange_device(device)


def synchronize(device: Any = None) -> None:
    _device_index(device)  # work is synchronous: nothing to wait for


class device:
    """Context manager selecting an "npu" device for the block."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        self.idx = _maybe_exchange_device(self.prev_idx)


def get_device_properties(device: Any = None) -> SimulatedNpuProperties:
    _device_index(device)
    return _current_properties()


def get_device_name(device: Any = None) -> str:
    """The SoC name, as torch_npu's (torch_npu/npu/__init__.py get_device_name: aclrtGetSocName)."""
    return get_device_properties(device).name


CAPABILITY_ENV = "TORCH_NPU_DEVICE_CAPABILITY"  # torch_npu's own variable, "major.minor"


def get_device_capability(device: Any = None) -> tuple[int, int] | None:
    """As torch_npu's (torch_npu/npu/__init__.py get_device_capability): an NPU has no CUDA compute capability, so
    this is None unless $TORCH_NPU_DEVICE_CAPABILITY says "major.minor" (then that pair), with a warning either
    way that the answer is for compatibility only."""
    _device_index(device)
    text = os.environ.get(CAPABILITY_ENV, "")
    found = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not found:
        why = f"{CAPABILITY_ENV}={text!r} is not 'major.minor'" if text else f"{CAPABILITY_ENV} is not set"
        warnings.warn(
            f"torch.npu.get_device_capability(): {why}, so there is none (None); an NPU has no CUDA capability "
            "(simulated NPU, as torch_npu)",
            stacklevel=2,
        )
        return None
    return int(found.group(1)), int(found.group(2))


def get_soc_version() -> int:
    """torch_npu's number for the SoC (torch_npu/npu/_backends.py get_soc_version; NpuVariables.h SocVersion)."""
    return _soc.soc_version


# torch_npu/csrc/core/npu/NpuVariables.cpp IsBF16Supported: GetSocVersion() >= SocVersion::Ascend910B1.
_BF16_FROM_SOC_VERSION = 220


def is_bf16_supported(including_emulation: bool = False) -> bool:
    return _soc.soc_version >= _BF16_FROM_SOC_VERSION


def get_amp_supported_dtype() -> list[torch.dtype]:
    # torch_npu/npu/autocast_utils.py get_amp_supported_dtype
    if is_bf16_supported():
        return [torch.float16, torch.bfloat16, torch.float32]
    return [torch.float16, torch.float32]


def cpu_fallback_counts(reset: bool = False) -> dict[str, int]:
    """Calls per operator ("aten::addmm", "aten::add.Tensor") that ran on the CPU through the extension's fallback
    (no npu kernel of their own) since the last reset; ``reset`` starts counting afresh."""
    return {name: int(count) for name, count in _ensure().extension.fallback_counts(reset).items()}


# Memory. One host-memory allocator counts the live bytes of every simulated device together (device_ext.cpp), so
# these answer for the process whichever device is asked; nothing is cached, so reserved memory is allocated memory.
# The extension keeps one all-time peak: after reset_peak_memory_stats, a new peak is exact once it exceeds the
# peak before the reset, and below that it is the highest value seen by these queries since the reset.
_peak_reset: list[int] = []  # [all-time peak at the last reset, highest value observed since]


def _live_and_peak() -> tuple[int, int]:
    if _instance is None:
        return 0, 0
    live = int(_instance.extension.memory_allocated())
    peak = int(_instance.extension.max_memory_allocated())
    with _lock:
        if _peak_reset:
            _peak_reset[1] = max(_peak_reset[1], live)
            if peak <= _peak_reset[0]:
                peak = _peak_reset[1]
    return live, peak


def memory_allocated(device: Any = None) -> int:
    _device_index(device)
    return _live_and_peak()[0]


def max_memory_allocated(device: Any = None) -> int:
    _device_index(device)
    return _live_and_peak()[1]


def memory_reserved(device: Any = None) -> int:
    return memory_allocated(device)


def max_memory_reserved(device: Any = None) -> int:
    return max_memory_allocated(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    _device_index(device)
    live, _ = _live_and_peak()
    all_time = int(_instance.extension.max_memory_allocated()) if _instance is not None else 0
    with _lock:
        _peak_reset[:] = [all_time, live]


def reset_max_memory_allocated(device: Any = None) -> None:
    # torch_npu/npu/memory.py: deprecated, resets every peak statistic
    warnings.warn(
        "torch.npu.reset_max_memory_allocated resets every peak memory statistic (reset_peak_memory_stats)",
        DeprecationWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes: total is the SoC's memory, free what the simulated tensors leave of it."""
    total = get_device_properties(device).total_memory
    return max(total - memory_allocated(device), 0), total


def memory_stats(device: Any = None) -> dict[str, int]:
    """The byte counters of torch_npu's memory_stats (torch_npu/npu/memory.py: "allocated_bytes.all.current", ...),
    flat and sorted like torch_npu's; per-pool, block and segment counts are not simulated."""
    _device_index(device)
    live, peak = _live_and_peak()
    stats = {"num_alloc_retries": 0, "num_ooms": 0}
    for kind in ("active_bytes", "allocated_bytes", "reserved_bytes"):
        stats[f"{kind}.all.current"] = live
        stats[f"{kind}.all.peak"] = peak
    return dict(sorted(stats.items()))


def empty_cache() -> None:
    """Nothing is cached: freed tensors return their memory at once."""


# Options. torch_npu passes them to CANN (torch_npu._C._npu_setOption); the simulated NPU records them, so a run can
# say what its script asked for, and they change nothing.
_options: dict[str, str] = {}


def simulated_options() -> dict[str, str]:
    """The torch_npu options the script set (set_option, set_compile_mode, config, matmul, conv), last value each."""
    with _lock:
        return dict(_options)


def set_option(option: Mapping[str, Any]) -> None:
    """torch_npu/npu/npu_config.py set_option (a dict of CANN options; recorded, names not checked)."""
    if not isinstance(option, Mapping):
        raise TypeError(f"torch.npu.set_option: the option must be a dict, got {type(option).__name__}")
    with _lock:
        _options.update({str(key): str(value) for key, value in option.items()})


def set_compile_mode(jit_compile: bool = False) -> None:
    """torch_npu/npu/npu_config.py set_compile_mode: the "jitCompile" option."""
    set_option({"jitCompile": "enable" if jit_compile else "disable"})


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
        with _lock:
            value = _options.get(key)
        return unset if value is None else value == "enable"

    def __repr__(self) -> str:
        return f"<simulated {self._path}: {', '.join(self._switches)}>"


config = _Switches(f"torch.{DEVICE}.config", {"allow_internal_format": ("ALLOW_INTERNAL_FORMAT", None)})
matmul = _Switches(f"torch.{DEVICE}.matmul", {"allow_hf32": ("ALLOW_MATMUL_HF32", False)})
conv = _Switches(f"torch.{DEVICE}.conv", {"allow_hf32": ("ALLOW_CONV_HF32", True)})


def _not_simulated(name: str, attribute: str) -> AttributeError:
    from npu_inductor_compat.tools.simulated import not_simulated

    return not_simulated.attribute_error(name, attribute)


def _get_current_raw_stream(device_index: int) -> int:
    """Raw handle of the current stream (generated wrappers import it as ``get_raw_stream``): always 0."""
    return int(_ensure().extension.current_raw_stream(device_index))


# Random numbers: the CPU fallback runs random kernels on CPU with the CPU default generator, which the
# extension's hooks also report as the npu default generator; these act on that generator.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> int:
    return int(torch.default_generator.seed())


def seed_all() -> int:
    return seed()


def initial_seed() -> int:
    return int(torch.default_generator.initial_seed())


def get_rng_state(device: Any = DEVICE) -> torch.Tensor:
    _device_index(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = DEVICE) -> None:
    _device_index(device)
    torch.default_generator.set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(DEVICE_COUNT)]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# Streams and events: classes deriving from torch.Stream / torch.Event (what Dynamo captures) whose constructors
# return plain torch.Stream / torch.Event objects on the npu device: torch checks the exact type of the other
# event in Event.elapsed_time (torch >= 2.9), so instances of a Python subclass could not be timed against each other.
class Stream(torch.Stream):  # type: ignore[misc]
    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> torch.Stream:  # type: ignore[misc]
        _ensure()
        if "stream_id" in kwargs:  # rebuilt from (stream_id, device_index, device_type)
            return torch.Stream(priority=priority, **kwargs)
        return torch.Stream(device=torch.device(DEVICE, _device_index(device)), priority=priority)


class Event(torch.Event):  # type: ignore[misc]
    def __new__(  # type: ignore[misc]
        cls,
        device: Any = None,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> torch.Event:
        _ensure()
        return torch.Event(
            device=torch.device(DEVICE, _device_index(device)),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


def current_stream(device: Any = None) -> torch.Stream:
    return Stream(device)


def default_stream(device: Any = None) -> torch.Stream:
    return Stream(device)


def set_stream(stream: Any) -> None:
    """There is one stream: nothing to switch."""


def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
    """There is one stream: nothing to switch."""


@contextlib.contextmanager
def stream(stream: Any) -> Iterator[Any]:
    yield stream


_DEVICE_API = (
    is_available,
    is_initialized,
    _lazy_init,
    _is_in_bad_fork,
    device_count,
    current_device,
    set_device,
    _exchange_device,
    _maybe_exchange_device,
    synchronize,
    device,
    get_device_properties,
    get_device_name,
    get_device_capability,
    get_soc_version,
    is_bf16_supported,
    get_amp_supported_dtype,
    memory_allocated,
    max_memory_allocated,
    memory_reserved,
    max_memory_reserved,
    reset_peak_memory_stats,
    reset_max_memory_allocated,
    mem_get_info,
    memory_stats,
    empty_cache,
    set_option,
    set_compile_mode,
    _get_current_raw_stream,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    initial_seed,
    get_rng_state,
    set_rng_state,
    get_rng_state_all,
    set_rng_state_all,
    Stream,
    Event,
    current_stream,
    default_stream,
    set_stream,
    _set_stream_by_id,
    stream,
)


def _missing_from_device_module(name: str) -> Any:
    """``torch.npu.<name>`` for a name the simulated NPU does not have: standin.NotSimulated (an AttributeError, so
    hasattr and getattr with a default still answer), naming it."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"module 'torch.{DEVICE}' has no attribute {name!r}", name=name)
    raise _not_simulated(f"torch.{DEVICE}.{name}", name)


def _device_module(instance: SimulatedNpu) -> types.ModuleType:
    """The ``torch.npu`` module: this file's device API under torch's name for it."""
    module = types.ModuleType(f"torch.{DEVICE}", "Simulated NPU device module (npu_inductor_compat).")
    for item in _DEVICE_API:
        setattr(module, item.__name__, item)
    for name, value in (("config", config), ("matmul", matmul), ("conv", conv)):
        setattr(module, name, value)
    module.SimulatedNpuProperties = SimulatedNpuProperties  # type: ignore[attr-defined]
    module.__getattr__ = _missing_from_device_module  # type: ignore[method-assign]
    # A package with no location: ``import torch_npu.npu.<name>`` reaches the stand-in's finder (standin.py)
    module.__path__ = []
    setattr(module, _MARK, True)
    module._simulated_npu = instance  # type: ignore[attr-defined]
    return module


# ------------------------------------------------------------------------------------------------ dynamo interface
_interface: type | None = None
SimulatedNpuInterface: type  # created on first access by __getattr__ below (no value here, on purpose)


def _make_interface() -> type:
    from torch._dynamo import device_interface as di

    class SimulatedNpuInterface(di.DeviceInterface):  # type: ignore[misc]
        """Dynamo/Inductor's runtime view of the simulated "npu" device (the selected Ascend SoC, one stream)."""

        device = globals()["device"]
        Event = globals()["Event"]
        Stream = globals()["Stream"]

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                di.caching_worker_current_devices[DEVICE] = _device_index(device)

            @staticmethod
            def current_device() -> int:
                return int(di.caching_worker_current_devices.get(DEVICE, current_device()))

            @staticmethod
            def get_device_properties(device: Any = None) -> SimulatedNpuProperties:
                return get_device_properties(device)

        current_device = staticmethod(current_device)
        set_device = staticmethod(set_device)
        maybe_exchange_device = staticmethod(_maybe_exchange_device)
        exchange_device = staticmethod(_exchange_device)
        device_count = staticmethod(device_count)
        is_available = staticmethod(is_available)
        stream = staticmethod(stream)
        current_stream = staticmethod(current_stream)
        set_stream = staticmethod(set_stream)
        _set_stream_by_id = staticmethod(_set_stream_by_id)
        get_raw_stream = staticmethod(_get_current_raw_stream)
        synchronize = staticmethod(synchronize)
        get_device_properties = staticmethod(get_device_properties)  # type: ignore[assignment]
        is_bf16_supported = staticmethod(is_bf16_supported)
        memory_allocated = staticmethod(memory_allocated)

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            # torch_npu/utils/_dynamo_device.py NpuInterface.get_compute_capability: "only return the chip model",
            # i.e. the SoC name; Inductor stores it as DeviceProperties.cc (torch's XPU interface does the same).
            return get_device_name(device)

        @classmethod
        def get_multi_processor_count(cls, device: Any = None) -> int:  # asked from torch 2.15 on
            # torch_npu/utils/_dynamo_device.py (2.14): get_multi_processor_count is the vector core count
            return int(get_device_properties(device).vector_core_num)

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
    # SimulatedNpuInterface subclasses a torch._dynamo class: built on first access, not at import.
    global _interface
    if name == "SimulatedNpuInterface":
        with _lock:
            if _interface is None:
                _interface = _make_interface()
        return _interface
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------------------------------------ device provider
def _interface_for_provider() -> type:
    setup()
    interface: type = __getattr__("SimulatedNpuInterface")
    return interface


def _triton_key() -> str:
    """Triton's cache key, read where torch reads it."""
    from torch._inductor.runtime import triton_compat

    # COMPAT(>= 2.9): torch wraps Triton's key in triton_compat (newer Triton moved it).
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [block]: 2.7 and 2.8 read it from Triton
    if not hasattr(triton_compat, "triton_key"):
        from triton.compiler.compiler import triton_key

        return str(triton_key())
    # END CAN REMOVE
    return str(triton_compat.triton_key())


def _backend_hash_without_driver(original: Any) -> Any:
    @wraps_original(original)
    def triton_hash_with_backend() -> str:
        import hashlib

        return hashlib.sha256(f"{_triton_key()}-{PROVIDER.name}".encode()).hexdigest().upper()

    return triton_hash_with_backend


def _seed_kernel_params(original: Any) -> Any:
    from npu_inductor_compat.tools.simulated.kernel_params import seed_instead_of_autotune

    return seed_instead_of_autotune(original)


def _records() -> tuple[Patch, ...]:
    return (
        Patch(
            id="simulated-triton-backend-hash",
            layer="simulated-npu",
            why="Inductor keys Triton kernels by the active Triton driver's hash; the simulated NPU has no driver",
            upstream="torch.utils._triton.triton_hash_with_backend (asks triton.runtime.driver.active)",
            remove_when="never while the simulated NPU has no Triton driver (codegen only)",
            changes=(Change("torch.utils._triton:triton_hash_with_backend", _backend_hash_without_driver),),
        ),
        Patch(
            id="simulated-kernel-params",
            layer="simulated-npu",
            why="cpp_wrapper launches every kernel once at compile time to save its launch parameters; nothing can "
            "be launched here, so each kernel's autotuner saves them from a simulated launcher instead",
            upstream="PythonWrapperCodegen.generate_and_run_autotune_block / CachingAutotuner.save_gpu_kernel",
            remove_when="never while the simulated NPU can neither compile nor launch kernels",
            changes=(
                Change(
                    "torch._inductor.codegen.wrapper:PythonWrapperCodegen.generate_and_run_autotune_block",
                    _seed_kernel_params,
                ),
            ),
        ),
    )


PROVIDER = DeviceProvider(
    name="simulated-npu",
    device_interface=_interface_for_provider,
    raw_stream_import="from torch.npu import _get_current_raw_stream as {name}",
    summary="the simulated NPU (PrivateUse1 renamed npu, CPU memory underneath; codegen only)",
    records=_records,  # no codegen classes of its own: stock Inductor's, and this package's NPU C++ wrapper
)


def _set_up_in_this_process() -> bool:
    return bool(getattr(getattr(torch, "npu", None), _MARK, False))


# Runtime code finds the simulated NPU through the provider registry, while it is set up in this process.
register_provider(PROVIDER, _set_up_in_this_process)
