"""The stub table of the torch_npu-wheel provider: each native symbol torch_npu's Python code reaches, answered
without its native library, saying why, what it returns and which real source it models; the hollow packages."""

from __future__ import annotations

import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.simulated.kernels import triton_ascend_driver
from npu_inductor_compat.tools.simulated.npu.not_simulated import NotSimulatedError
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelTree

__all__ = ["HOLLOW", "NATIVE", "STUBS", "TRITON_ASCEND_UTILS", "Hollow", "MissingStub", "Stub", "custom_schemas"]


class MissingStub(NotSimulatedError):
    """torch_npu's code reached a native symbol (or module) that the stub table does not have.

    Deliberately neither an AttributeError nor an ImportError: ``hasattr`` probes and ``except ImportError``
    fallbacks in torch_npu must not swallow it. It is also recorded (wheel_depth.py
    ``WheelDepth.missing``) in case a broader ``except`` does."""


class StubHost(Protocol):
    """What a stub's ``value`` is given: the depth it serves (wheel_depth.py WheelDepth)."""

    tree: WheelTree
    schema_failures: list[str]  # yaml schemas torch could not define

    def stub_module(self, name: str) -> types.ModuleType: ...


@dataclass(frozen=True)
class Stub:
    """One native symbol torch_npu's Python code reaches, answered without the native library.

    ``name`` is ``module:attribute``; ``source`` the real definition (a file of github.com/Ascend/pytorch at the
    paired release's branch); ``value`` builds the answer from the depth it serves (called once per stand-in)."""

    name: str
    why: str
    returns: str
    source: str
    value: Callable[[StubHost], Any]
    # "attribute": ``value`` is the attribute's value on a stub module; "schemas": ``value`` defines operator
    # schemas (``name`` is ``torch.ops:<namespace>``) and returns what to undo them with; "active-driver":
    # ``value`` is the driver set active on triton.runtime.driver while the stand-in is in place
    kind: str = "attribute"

    @property
    def module(self) -> str:
        return Target.parse(self.name).module

    @property
    def attribute(self) -> str:
        return Target.parse(self.name).qualname


@dataclass(frozen=True)
class Hollow:
    """A torch_npu package entered without running its ``__init__`` (its submodules load from the wheel)."""

    name: str
    why: str


def _soc_version() -> int:
    from npu_inductor_compat.tools.simulated.npu.device_properties import current_soc

    return current_soc().soc_version


def _native_class(qualified: str) -> type:
    """A stand-in for a pybind11 class: subclassable (torch_npu's Python subclasses it at import), but creating an
    instance raises MissingStub naming it (nothing on the codegen path does)."""

    # __new__, not __init__: torch_npu's subclasses define their own __new__ (torch_npu/npu/streams.py Stream)
    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        raise MissingStub(
            f"{qualified}() was called (creating a {cls.__name__}): the stub only lets torch_npu subclass the native "
            "class; an instance needs torch_npu's native library (add a stub that does what the caller needs)"
        )

    target = Target.parse(qualified)
    return type(
        target.qualname, (), {"__new__": __new__, "__module__": target.module, "__doc__": f"stub of {qualified}"}
    )


NATIVE = "torch_npu._C"


def _raw_stream(_depth: StubHost) -> Callable[[int], int]:
    from npu_inductor_compat.tools.simulated.npu import device_api

    return device_api._get_current_raw_stream


def _device_call(name: str) -> Callable[[StubHost], Callable[..., Any]]:
    """The simulated device's own function ``name`` (device_api.py), looked up when the stand-in is made."""

    def value(_depth: StubHost) -> Callable[..., Any]:
        from npu_inductor_compat.tools.simulated.npu import device_api

        found: Callable[..., Any] = getattr(device_api, name)
        return found

    return value


def _npu_init(_depth: StubHost) -> Callable[[], None]:
    def init() -> None:
        from npu_inductor_compat.tools.simulated.npu import device_api

        device_api._lazy_init()

    return init


TRITON_ASCEND_LIBDEVICE = "triton.language.extra.ascend"
TRITON_ASCEND_UTILS = "triton.backends.ascend.utils"
# triton-ascend 3.2.0 python/triton/backends/ascend/utils.py get_ascend_arch_from_env: the archs it accepts
TRITON_ASCEND_ARCHS = (
    "Ascend910B1",
    "Ascend910B2",
    "Ascend910B3",
    "Ascend910B4",
    "Ascend910_9362",
    "Ascend910_9372",
    "Ascend910_9381",
    "Ascend910_9382",
    "Ascend910_9391",
    "Ascend910_9392",
    "Ascend310B1",
    "Ascend310B2",
    "Ascend310B3",
    "Ascend310B4",
    "Ascend910_9579",
    "Ascend910_9581",
    "Ascend910_9589",
    "Ascend910_9599",
)


def _env_on(name: str) -> bool:
    """triton-ascend 3.2.0's on/off reading: ``os.getenv(name, "false").lower() in ("true", "1")``."""
    return os.getenv(name, "false").lower() in ("true", "1")


def _auto_map_parallel_blocks(_depth: StubHost) -> Callable[[], bool]:
    def _is_auto_map_parallel_blocks_enabled() -> bool:
        return _env_on("TRITON_ALL_BLOCKS_PARALLEL")

    return _is_auto_map_parallel_blocks_enabled


def _force_disable_ffts(_depth: StubHost) -> Callable[[], bool]:
    def force_disable_ffts() -> bool:
        return _env_on("TRITON_DISABLE_FFTS")

    return force_disable_ffts


def _ascend_arch_from_env(_depth: StubHost) -> Callable[[], str]:
    def get_ascend_arch_from_env() -> str:
        arch = os.getenv("TRITON_ASCEND_ARCH", "")
        if arch and arch not in TRITON_ASCEND_ARCHS:
            raise ValueError(
                f"TRITON_ASCEND_ARCH = {arch} is invalid!Candidates are [{', '.join(TRITON_ASCEND_ARCHS)}]"
            )
        return arch

    return get_ascend_arch_from_env


def _ffts_supported(_depth: StubHost) -> Callable[[str], bool]:
    def is_ffts_supported(arch: str) -> bool:
        return arch not in ("Ascend910A", "Ascend310B4")

    return is_ffts_supported


def _profiler_activity(_depth: StubHost) -> type:
    import enum

    # the pybind11 enum's members and values (NpuActivityType: CPU = 0, NPU)
    class ProfilerActivity(enum.IntEnum):
        CPU = 0
        NPU = 1

    ProfilerActivity.__module__ = f"{NATIVE}._profiler"
    return ProfilerActivity


NPU_SCHEMAS = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
_FUNC = re.compile(r"^(?:- |  )func:\s*(?P<schema>\S.*?)\s*$")


def custom_schemas(tree: WheelTree) -> list[str]:
    """The schemas of the ``custom:`` section of the yaml the wheel ships (the ``npu::`` operators its build
    registers), read line by line (``- func: ...`` / ``  func: ...`` items; no YAML parser needed)."""
    schemas: list[str] = []
    section = None
    for line in (tree.root / NPU_SCHEMAS).read_text().splitlines():
        top = re.match(r"^([A-Za-z_]+):", line)
        if top:
            section = top.group(1)
            continue
        found = _FUNC.match(line)
        if found and section == "custom":
            schemas.append(found.group("schema"))
    return schemas


def _define_npu_schemas(depth: StubHost) -> Any:
    import torch

    library = torch.library.Library("npu", "DEF")
    for schema in custom_schemas(depth.tree):
        try:
            library.define(schema)
        except RuntimeError as err:  # recorded, and reported by the depth's summary
            depth.schema_failures.append(f"{schema}: {str(err).splitlines()[0]}")
    return library


HOLLOW: tuple[Hollow, ...] = (
    Hollow(
        "torch_npu.utils",
        "torch_npu/_inductor imports torch_npu.utils._dynamo (backend registry, options); the package's __init__ "
        "imports the operator utilities (combine_tensors, asd_detector, serialization, ...), which need _C",
    ),
    Hollow(
        "torch_npu.op_plugin",
        "the stand-in imports its meta/_meta_registrations.py (torch_npu's Meta kernels, as torch_npu's "
        "initialisation does); the package's __init__ loads the ATB library (atb/_atb_ops.py _patch_atb_and_loadso)",
    ),
    Hollow(
        "torch_npu.profiler",
        "torch_npu/_inductor/profiler.py and select_algorithm.py import the message helpers of "
        "torch_npu.profiler.analysis and the trace handler; the package's __init__ loads the whole NPU profiler "
        "(torch_npu._C._profiler, torch_npu.npu streams, mstx)",
    ),
)


def _cann_version_at_least(_depth: StubHost) -> Callable[[str, str], int]:
    def _is_gte_cann_version(version: str, module: str) -> int:
        if module == "DRIVER":  # TORCH_CHECK in IsGteCANNVersion
            raise RuntimeError("When the module is DRIVER, IsGteCANNVersion is not supported. ")
        return 0  # no CANN here: GetCANNVersion(module) is "", which compares as invalid, so not >= version

    return _is_gte_cann_version


def _device_only(qualified: str) -> Callable[..., Any]:
    def device_only(*args: Any, **kwargs: Any) -> Any:
        raise MissingStub(f"{qualified} was called: it needs an NPU (the stub only lets torch_npu import it)")

    device_only.__qualname__ = device_only.__name__ = Target.parse(qualified).qualname
    return device_only


STUBS: tuple[Stub, ...] = (
    Stub(
        f"{NATIVE}:_NPUShapeHandling",
        "torch_npu/utils/_dynamo.py subclasses it at import (NPUShapeHandling, the AOTI shape-gear helper that "
        "torch_npu/_inductor/shape_handling.py re-exports); codegen never creates one",
        "a subclassable class whose constructor raises MissingStub",
        "torch_npu/csrc/inductor/aoti_package/shape_handling.cpp (shared_ptr_class_<NPUShapeHandling> "
        '"_NPUShapeHandling")',
        lambda _depth: _native_class(f"{NATIVE}:_NPUShapeHandling"),
    ),
    Stub(
        f"{NATIVE}:_NPUStreamBase",
        "torch_npu/npu/streams.py subclasses it at import (Stream, SyncLaunchStream), reached where the "
        "_inductor/__init__.py registers torch_npu's dynamo device interface itself (2.9.0.post9 on: "
        "utils/_dynamo_device.py NpuInterface, whose Stream and Event are these classes); codegen creates no stream",
        "a subclassable class whose constructor raises MissingStub",
        'torch_npu/csrc/npu/Stream.cpp (THNPStreamType, added to torch_npu._C as "_NPUStreamBase")',
        lambda _depth: _native_class(f"{NATIVE}:_NPUStreamBase"),
    ),
    Stub(
        f"{NATIVE}:_NPUEventBase",
        "torch_npu/npu/streams.py subclasses it at import (Event, ExternalEvent), with _NPUStreamBase (2.9.0.post9 "
        "on); codegen creates no event",
        "a subclassable class whose constructor raises MissingStub",
        'torch_npu/csrc/npu/Event.cpp (THNPEventType, added to torch_npu._C as "_NPUEventBase")',
        lambda _depth: _native_class(f"{NATIVE}:_NPUEventBase"),
    ),
    Stub(
        f"{NATIVE}:_npu_get_soc_version",
        "torch_npu/npu/_backends.py get_soc_version(), read at import by torch_npu/_inductor/config.py "
        "(is_ascend950, the vector-core count and the tiling limits follow the SoC)",
        "the simulated SoC's number (soc.py soc_version: NpuVariables.h SocVersion, e.g. 223 for Ascend910B3)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_npu_get_soc_version (c10_npu::GetSocVersion())",
        lambda _depth: _soc_version,
    ),
    Stub(
        f"{NATIVE}:_npu_getCurrentRawStreamNoWait",
        "torch_npu/_inductor/codegen/npu/device_op_overrides.py probes it with hasattr to choose the raw-stream "
        "import every generated wrapper starts with (it is present in 2.7.1)",
        "the simulated device's raw stream getter (device_api.py _get_current_raw_stream: the handle of its one "
        "stream, 0)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_getCurrentRawStreamNoWait_wrap (getCurrentNPUStreamNoWait)",
        _raw_stream,
    ),
    Stub(
        f"{NATIVE}:_npu_getCurrentRawStream",
        "the raw-stream getter of torch_npu/utils/_dynamo_device.py and torch_npu/_inductor/utils.py "
        "get_current_raw_stream, and the import device_op_overrides.py chooses when CATLASS is enabled",
        "the simulated device's raw stream getter (0)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_getCurrentStream_raw (getCurrentNPUStream(device).stream())",
        _raw_stream,
    ),
    # The device guard every generated Python wrapper's call() opens (torch.npu.utils.device(0), then
    # torch.npu.set_device(0)): reached when codegen --execute runs a wrapper torch_npu generated.
    Stub(
        f"{NATIVE}:_npu_getDeviceWithoutSet",
        "torch_npu/npu/utils.py device.__enter__ reads the current device before switching",
        "the simulated device's current index (device_api.py current_device: 0, its one device)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_getDeviceWithoutSet_wrap",
        _device_call("current_device"),
    ),
    Stub(
        f"{NATIVE}:_npu_setDevice",
        "torch_npu/npu/utils.py set_device and device.__enter__",
        "the simulated device's set_device (device_api.py: index 0, or its error naming the valid index)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_setDevice_wrap",
        _device_call("set_device"),
    ),
    Stub(
        f"{NATIVE}:_npu_maybeExchangeDevice",
        "torch_npu/npu/utils.py device.__exit__ goes back to the device it left",
        "the simulated device's _maybe_exchange_device (device_api.py: the previous index)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_maybeExchangeDevice_wrap",
        _device_call("_maybe_exchange_device"),
    ),
    Stub(
        f"{NATIVE}:_npu_init",
        "torch_npu/npu/__init__.py _lazy_init, which device.__enter__ calls, initialises the device once",
        "the simulated device's _lazy_init (device_api.py: the device is set up already)",
        "torch_npu/csrc/npu/Module.cpp THNPModule_initExtension",
        _npu_init,
    ),
    Stub(
        f"{NATIVE}:_is_gte_cann_version",
        "torch_npu/npu/utils.py _is_gte_cann_version(), called at import by _inductor/fx_passes/"
        "fav3_partition_pass.py (2.9.0.post9 on: _CANN_VERSION = ... '9.1.0', whether the fused-attention "
        "v3 partition pass applies)",
        "0 (false) for every version: the simulated host has no CANN, so GetCANNVersion answers '' and the "
        "comparison is invalid, which IsGteCANNVersion answers false; RuntimeError for module DRIVER, as it does",
        "torch_npu/csrc/npu/Module.cpp THNPModule_is_gte_cann_version (IsGteCANNVersion, "
        "torch_npu/csrc/core/npu/GetCANNInfo.cpp)",
        _cann_version_at_least,
    ),
    Stub(
        f"{NATIVE}._profiler:ProfilerActivity",
        "torch_npu/profiler/__init__.py imports it; torch_npu/_inductor/select_algorithm.py and profiler.py import "
        "torch_npu.profiler (its trace handler, for benchmarking kernels on a device: never called here)",
        "an IntEnum with CPU = 0 and NPU = 1",
        'torch_npu/csrc/profiler/init.cpp (py::enum_<NpuActivityType>(m, "ProfilerActivity"))',
        _profiler_activity,
    ),
    # triton-ascend's names. torch_npu's code imports them from the top-level `triton`, which in this process is
    # torch's own Triton (triton-ascend never shares a process with it: tools/simulated/kernels/ttir_check.py); the
    # kernels are not compiled here, so these are only looked up. Modelled on triton-ascend 3.2.0, the release on
    # PyPI (its python/triton/... files, as triton_ascend_site.py installs it into the cache).
    Stub(
        f"{TRITON_ASCEND_LIBDEVICE}:libdevice",
        "torch_npu/_inductor/runtime/triton_helpers.py binds `libdevice` at import (tl.extra.cann.libdevice on "
        "newer triton-ascend; 3.2.0 has no `cann`, so its fallback tl.extra.ascend.libdevice); its @triton.jit "
        "helpers (frexp) only name it. 2.12.0.post3's npu_triton_helpers.py, which its kernels import, imports it as "
        "a module (`import triton.language.extra.ascend.libdevice as libdevice`): it is in sys.modules too",
        "an empty stub module: any function looked up on it raises MissingStub (nothing is compiled here)",
        "triton-ascend 3.2.0 triton/language/extra/ascend/libdevice.py",
        lambda depth: depth.stub_module(f"{TRITON_ASCEND_LIBDEVICE}.libdevice"),
    ),
    Stub(
        f"{TRITON_ASCEND_UTILS}:_is_auto_map_parallel_blocks_enabled",
        "torch_npu's C++ wrapper asks it for every kernel it launches (_inductor/utils.py "
        "triton_support_auto_blockify, 2.7.1.post11 and 2.9.0.post9 codegen/cpp_wrapper_npu.py: block_num capped at "
        "the vector-core count)",
        "triton-ascend 3.2.0's answer: whether TRITON_ALL_BLOCKS_PARALLEL is 'true' or '1' (any case)",
        "triton-ascend 3.2.0 triton/backends/ascend/utils.py _is_auto_map_parallel_blocks_enabled",
        _auto_map_parallel_blocks,
    ),
    Stub(
        f"{TRITON_ASCEND_UTILS}:force_disable_ffts",
        "torch_npu's C++ wrapper asks whether kernels take the FFTS address (_inductor/utils.py triton_support_ffts, "
        "2.7.1.post11 and 2.9.0.post9 codegen/cpp_wrapper_npu.py generate_args_decl)",
        "triton-ascend 3.2.0's answer: whether TRITON_DISABLE_FFTS is 'true' or '1' (any case)",
        "triton-ascend 3.2.0 triton/backends/ascend/utils.py force_disable_ffts",
        _force_disable_ffts,
    ),
    Stub(
        f"{TRITON_ASCEND_UTILS}:get_ascend_arch_from_env",
        "with is_ffts_supported, torch_npu's triton_support_ffts (as force_disable_ffts)",
        "triton-ascend 3.2.0's answer: TRITON_ASCEND_ARCH, '' when unset, ValueError naming the candidates when it "
        "is not one of the archs 3.2.0 accepts",
        "triton-ascend 3.2.0 triton/backends/ascend/utils.py get_ascend_arch_from_env",
        _ascend_arch_from_env,
    ),
    Stub(
        f"{TRITON_ASCEND_UTILS}:is_ffts_supported",
        "with get_ascend_arch_from_env, torch_npu's triton_support_ffts (as force_disable_ffts)",
        "triton-ascend 3.2.0's answer: False for Ascend910A and Ascend310B4, True otherwise ('' included)",
        "triton-ascend 3.2.0 triton/backends/ascend/utils.py is_ffts_supported",
        _ffts_supported,
    ),
    Stub(
        "triton.runtime.driver:driver.active",
        "torch_npu 2.8.0.post5's and 2.9.1's _inductor/config.py read the NPU's target, device and AI core count from "
        "triton's active driver at import (triton-ascend's NPUDriver on a host; here no driver is active)",
        "triton-ascend's NPUDriver answered from the simulated SoC (arch, AI cores, vector cores = 2 x AI cores, "
        "device through torch.npu); launching, streams and benchmarking raise NeedsAnNpu; the driver's previous "
        "state is restored on exit",
        "triton-ascend 3.2.0 triton/backends/ascend/driver.py NPUDriver, NPUUtils; npu_utils.cpp get_arch "
        "(rtGetSocVersion), get_aicore_num (rtGetAiCoreCount)",
        lambda depth: triton_ascend_driver.NpuDriver(_ascend_arch_from_env(depth)),
        kind="active-driver",
    ),
    Stub(
        "torch.ops:npu",
        "torch_npu's Python code names its operators at import (torch_npu/_inductor/ascend_npu_ir/ascend_npu_ir/"
        "config.py lists torch.ops.npu.npu_dtype_cast, ...; the lowering tables key on them)",
        "every schema of the yaml's custom: section defined in the npu namespace, without kernels (calling one "
        "fails in torch's dispatcher, naming it); the library is destroyed on exit",
        f"{NPU_SCHEMAS} (shipped in the wheel; the build generates TORCH_LIBRARY(npu, m) registrations from it)",
        _define_npu_schemas,
        kind="schemas",
    ),
    Stub(
        "torch_npu.profiler:tensorboard_trace_handler",
        "torch_npu/_inductor/select_algorithm.py imports it from the hollow torch_npu.profiler, to profile "
        "benchmark runs of kernels on the device (never run here)",
        "a function that raises MissingStub when called",
        "torch_npu/profiler/profiler.py tensorboard_trace_handler (Python, over the native profiler)",
        lambda _depth: _device_only("torch_npu.profiler:tensorboard_trace_handler"),
    ),
)
