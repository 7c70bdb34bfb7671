"""torch_npu's own Inductor code, from its released wheel, on the simulated NPU: the stand-in's deep depth.

On an Ascend host torch_npu replaces most of stock Inductor's "npu" codegen with its own pure-Python code
(``torch_npu/_inductor``: its scheduling and index kernel, heuristics and autotuner, grid and wrappers). That code
needs no NPU to *generate* kernels, only torch_npu's native module for a handful of answers. This module runs it:

- :func:`unpacked` unpacks the pure-Python tree of the torch_npu wheel paired with the installed torch (downloaded
  once into the survey's cache, ``tools/survey.py``; never installed: no ``.so``, no ``include``/``lib``, no
  ``dist-info`` are unpacked, and the tree is never put on ``sys.path``), once, atomically.
- :class:`WheelDepth` is what the torch_npu stand-in (``standin.py``, ``torch_npu_standin(depth="wheel")``) puts
  behind its ``__path__``: ``torch_npu._inductor`` and the pure-Python torch_npu modules it imports load from that
  tree; ``torch_npu`` itself stays the stand-in (the wheel's ``__init__`` never runs) and ``torch_npu.npu`` the
  simulated device; the packages in :data:`HOLLOW` are entered without running their ``__init__``; the native
  modules are :data:`STUBS`, one table of named stubs, each saying why it exists, what it returns and which real
  source it models. Anything else reached of a native module, or a torch_npu module neither in the tree nor in the
  table, raises :class:`MissingStub` naming it (and is recorded, for code that catches it).
- :func:`provider` is the device provider ``torch_npu-wheel``: the simulated NPU's device interface, torch_npu's
  raw-stream import and codegen classes, and records that load torch_npu's Inductor backend (its own registration,
  as ``import torch_npu._inductor`` does on hardware) and make torch_npu's silent fallbacks visible
  (:class:`Events`, per kernel). What those records aim at differs between releases (2.12.0.post3's ``_inductor``
  is reorganised: no combined scheduling, no linear/no_linear choice, no TTIR check): :data:`RELEASES` names it per
  release, each target read in that release's wheel (tests check the table against the wheels).
- The C++ wrapper (``codegen --cpp-wrapper``) loads every kernel module in this process (nothing is compiled) and
  torch_npu's own autotuner saves its launch parameters: from a simulated kernel as triton-ascend's compiler leaves
  it (``kernel_params.triton_ascend_compiled``), for the first runtime-block candidate of torch_npu's own plan
  (:func:`seed_first_candidate`). The kernels import triton-ascend's ``extension`` from torch_npu's triton_helpers,
  which binds it only from ``tl.extra.cann``: record ``torch-npu-wheel-helpers-extension`` binds a module with no
  ops there (as kernel_check.py's BRIDGES do for triton-ascend 3.2.0 workers). The wrapper is this package's with
  fix ``cpp-wrapper-workspace-locks``, torch_npu's own ``CppWrapperNpu`` without it.

torch_npu's ``_inductor`` patches torch when imported and offers no undo: after a run with the deep stand-in the
process keeps those patches (the codegen command runs one script per process; tests use subprocesses).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import tempfile
import threading
import types
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.providers import DeviceProvider
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.simulated import pairs
from npu_inductor_compat.tools.simulated.standin import NotSimulatedError

__all__ = [
    "HOLLOW",
    "PAIRED",
    "PROVIDER_NAME",
    "RELEASES",
    "STUBS",
    "Events",
    "MissingStub",
    "ReleaseTargets",
    "Stub",
    "WheelDepth",
    "WheelTree",
    "WheelUnavailable",
    "paired_release",
    "provider",
    "release_targets",
    "unpacked",
]

PACKAGE = "torch_npu"
CUSTOM_OPS = "torch_npu.utils.custom_ops"
# torch_npu's Meta kernels for its operators (and a few aten ones), registered at import (torch.library.Library)
META_REGISTRATIONS = "torch_npu.op_plugin.meta._meta_registrations"
# The wheel's top-level packages: torch_npu, and torchnpugen (its code generator's tables, pure Python; torch_npu's
# lowering reads torchnpugen.aoti.fallback_ops)
TOP_LEVEL = (PACKAGE, "torchnpugen")
PROVIDER_NAME = "torch_npu-wheel"
# The torch_npu releases whose _inductor this provider runs: its stubs and RELEASES are checked against these wheels
# only. Each runs on exactly the torch its wheel's metadata requires (pairs.py), never on another patch release.
# 2.13.0 and 2.14.0 import with the same named stubs as 2.12.0.post3 (none added: their _inductor reaches no other
# native symbol on the codegen path).
STUBBED = ("2.7.1.post11", "2.9.0.post9", "2.12.0.post3", "2.13.0", "2.14.0")
# torch release -> the stubbed torch_npu release that requires it, e.g. "2.9.0" -> "2.9.0.post9" (from pairs.py)
PAIRED: dict[str, str] = {pairs.pair(release).torch: release for release in STUBBED}
# Stubbed releases that do not run yet, and why (torch_npu release -> reason).
NOT_YET: dict[str, str] = {}
UNPACKED_DIR = "torch_npu_python"  # beside the survey's wheel cache: <cache>/../torch_npu_python/<version>/torch_npu


class WheelUnavailable(RuntimeError):
    """No torch_npu wheel is paired with this torch, or it cannot be downloaded or unpacked (the message says)."""


class MissingStub(NotSimulatedError):
    """torch_npu's code reached a native symbol (or module) that the stub table does not have.

    Deliberately neither an AttributeError nor an ImportError: ``hasattr`` probes and ``except ImportError``
    fallbacks in torch_npu must not swallow it. It is also recorded (:attr:`WheelDepth.missing`) in case a broader
    ``except`` does."""


# ------------------------------------------------------------------------------------------------ the wheel
def paired_release(torch_version: str) -> str:
    """The stubbed torch_npu release that requires exactly ``torch_version``'s release; WheelUnavailable saying why
    there is none (for another patch release of a stubbed release's minor: the torch to install instead)."""
    from npu_inductor_compat.version import parse_release

    release = ".".join(map(str, parse_release(torch_version)))
    stubbed = f"stubbed: {', '.join(f'{npu} on torch {torch}' for torch, npu in PAIRED.items())}"
    if release in PAIRED and PAIRED[release] not in NOT_YET:
        return PAIRED[release]
    reasons = [f"torch_npu {npu}: {NOT_YET[npu]}" for npu in NOT_YET if pairs.pair(npu).torch == release]
    reasons += [
        f"torch_npu {row.torch_npu} (for torch {release}) is not stubbed yet"
        for row in pairs.for_torch(release)
        if row.torch_npu not in STUBBED and row.torch_npu not in NOT_YET
    ]
    refusals = [
        pairs.pair(npu).refusal(torch_version)
        for torch, npu in PAIRED.items()
        if pairs.minor(torch) == pairs.minor(release) and torch != release
    ]
    if not reasons and not refusals:
        reasons = [f"torch {torch_version}: no torch_npu release is paired with torch {release}"]
    # a refusal names the torch to install; otherwise the message names the pairs that run
    raise WheelUnavailable("; ".join(reasons + refusals) if refusals else f"{'; '.join(reasons)} ({stubbed})")


@dataclass(frozen=True)
class WheelTree:
    """An unpacked torch_npu wheel's pure-Python tree."""

    version: str  # torch_npu's, e.g. "2.7.1.post11"
    torch: str  # the torch release it is built for (its Requires-Dist), e.g. "2.7.1"
    root: Path  # holds torch_npu/

    @property
    def package(self) -> Path:
        return self.root / PACKAGE

    def native_modules(self) -> frozenset[str]:
        """The extension modules the wheel ships (never unpacked), e.g. ``torch_npu._C``."""
        return frozenset((self.root / NATIVE_LIST).read_text().split())


def _keep(member: str) -> bool:
    """The wheel members unpacked: torch_npu's (and torchnpugen's) Python modules and data files, never native code
    or metadata."""
    if not member.startswith(tuple(f"{name}/" for name in TOP_LEVEL)) or member.endswith("/"):
        return False
    if member.startswith((f"{PACKAGE}/include/", f"{PACKAGE}/lib/", f"{PACKAGE}/bin/")):
        return False
    name = member.rsplit("/", 1)[-1]
    return not (name.endswith((".so", ".a", ".pyd", ".dll")) or ".so." in name)


NATIVE_LIST = "NATIVE_MODULES"  # in the unpacked tree: the extension modules the wheel has (not unpacked)


def _native_module(member: str) -> str | None:
    """``torch_npu._C`` for ``torch_npu/_C.cpython-311-x86_64-linux-gnu.so``; None for anything else."""
    found = re.fullmatch(r"((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*)\.(?:cpython-[^/]*|abi3)\.so", member)
    if found is None or not member.startswith(tuple(f"{name}/" for name in TOP_LEVEL)):
        return None
    return found.group(1).replace("/", ".")


def _torch_requirement(archive: zipfile.ZipFile, version: str) -> str:
    """The torch release the wheel requires, as pairs.py names it (the wheel's pin must be the table's)."""
    found = [name for name in archive.namelist() if re.fullmatch(r"torch_npu-[^/]+\.dist-info/METADATA", name)]
    if not found:
        raise WheelUnavailable(f"torch_npu {version}: the wheel has no dist-info/METADATA")
    try:
        pin, row = pairs.requires_torch(archive.read(found[0]).decode("utf-8")), pairs.pair(version)
    except ValueError as err:
        raise WheelUnavailable(f"torch_npu {version}: {err}") from err
    if pin != row.pin:
        raise WheelUnavailable(f"torch_npu {version}: its metadata requires {pin}, pairs.py says {row.pin}")
    return row.torch


def unpacked(version: str, announce: Callable[[str], None] | None = None) -> WheelTree:
    """The pure-Python tree of torch_npu ``version``: downloaded (once, into the survey's cache) and unpacked (once,
    atomically: a half-unpacked tree is never seen) into ``<cache>/../torch_npu_python/<version>``."""
    from npu_inductor_compat.tools import wheel_cache as survey  # the wheel cache, once part of the survey

    say = announce or (lambda message: print(message, file=sys.stderr, flush=True))
    wheels = survey.default_cache_dir()
    target = wheels.parent / UNPACKED_DIR / version
    marker = target / "TORCH_REQUIREMENT"
    if not marker.is_file():
        if survey.cached_wheel(version, wheels) is None:
            size = survey.published_size(version)
            how_big = f"{size / 1e6:.0f} MB" if size else "size unknown"
            say(f"downloading the torch_npu {version} wheel ({how_big}) into {wheels}, once (never installed) ...")
        try:
            wheel = survey.fetch(version, wheels)
        except survey.SurveyError as err:
            raise WheelUnavailable(f"torch_npu {version}: cannot download its wheel: {err}") from err
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with tempfile.TemporaryDirectory(dir=target.parent) as scratch, zipfile.ZipFile(wheel) as archive:
                torch = _torch_requirement(archive, version)
                archive.extractall(scratch, [name for name in archive.namelist() if _keep(name)])
                natives = sorted(filter(None, map(_native_module, archive.namelist())))
                (Path(scratch) / NATIVE_LIST).write_text("".join(f"{name}\n" for name in natives))
                (Path(scratch) / marker.name).write_text(torch + "\n")
                if target.exists():  # a tree another process finished meanwhile (or an unusable leftover)
                    if marker.is_file():
                        return _tree(version, target)
                    raise WheelUnavailable(f"{target} exists without {marker.name}: remove it and retry")
                os.replace(scratch, target)
                os.mkdir(scratch)  # TemporaryDirectory removes its (now moved) directory on exit
        except (OSError, zipfile.BadZipFile) as err:
            raise WheelUnavailable(f"torch_npu {version}: cannot unpack {wheel}: {err}") from err
    return _tree(version, target)


def _tree(version: str, target: Path) -> WheelTree:
    return WheelTree(version, (target / "TORCH_REQUIREMENT").read_text().strip(), target)


# ------------------------------------------------------------------------------------------------ the stub table
@dataclass(frozen=True)
class Stub:
    """One native symbol torch_npu's Python code reaches, answered without the native library.

    ``name`` is ``module:attribute``; ``source`` the real definition (a file of github.com/Ascend/pytorch at the
    paired release's branch); ``value`` builds the answer from the depth it serves (called once per stand-in)."""

    name: str
    why: str
    returns: str
    source: str
    value: Callable[[WheelDepth], Any]
    # "attribute": ``value`` is the attribute's value on a stub module; "schemas": ``value`` defines operator
    # schemas (``name`` is ``torch.ops:<namespace>``) and returns what to undo them with
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
    from npu_inductor_compat.tools.simulated import device

    return device.current_soc().soc_version


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
_NOTHING = object()


def _raw_stream(_depth: WheelDepth) -> Callable[[int], int]:
    from npu_inductor_compat.tools.simulated import device

    return device._get_current_raw_stream


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


def _auto_map_parallel_blocks(_depth: WheelDepth) -> Callable[[], bool]:
    def _is_auto_map_parallel_blocks_enabled() -> bool:
        return _env_on("TRITON_ALL_BLOCKS_PARALLEL")

    return _is_auto_map_parallel_blocks_enabled


def _force_disable_ffts(_depth: WheelDepth) -> Callable[[], bool]:
    def force_disable_ffts() -> bool:
        return _env_on("TRITON_DISABLE_FFTS")

    return force_disable_ffts


def _ascend_arch_from_env(_depth: WheelDepth) -> Callable[[], str]:
    def get_ascend_arch_from_env() -> str:
        arch = os.getenv("TRITON_ASCEND_ARCH", "")
        if arch and arch not in TRITON_ASCEND_ARCHS:
            raise ValueError(
                f"TRITON_ASCEND_ARCH = {arch} is invalid!Candidates are [{', '.join(TRITON_ASCEND_ARCHS)}]"
            )
        return arch

    return get_ascend_arch_from_env


def _ffts_supported(_depth: WheelDepth) -> Callable[[str], bool]:
    def is_ffts_supported(arch: str) -> bool:
        return arch not in ("Ascend910A", "Ascend310B4")

    return is_ffts_supported


def _profiler_activity(_depth: WheelDepth) -> type:
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


def _define_npu_schemas(depth: WheelDepth) -> Any:
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


def _cann_version_at_least(_depth: WheelDepth) -> Callable[[str, str], int]:
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
        "the simulated device's raw stream getter (device.py _get_current_raw_stream: the handle of its one stream, 0)",
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
    # torch's own Triton (triton-ascend never shares a process with it: tools/simulated/kernel_check.py); the
    # kernels are not compiled here, so these are only looked up. Modelled on triton-ascend 3.2.0, the release on
    # PyPI (its python/triton/... files, as installed by kernel_check.py into the cache).
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


# ------------------------------------------------------------------------------------------------ the depth
class _StubModule(types.ModuleType):
    """A native module: exactly its stub-table entries; anything else raises MissingStub naming it."""

    def __init__(self, name: str, depth: WheelDepth) -> None:
        super().__init__(name, f"stub of torch_npu's native module {name} (npu_inductor_compat, {PROVIDER_NAME})")
        self.__dict__["_depth"] = depth

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute, name=attribute)
        depth: WheelDepth = self.__dict__["_depth"]
        if depth.has_submodule(self.__name__, attribute):  # `from <hollow package> import <submodule>`: import it
            raise AttributeError(attribute, name=attribute)
        raise depth.missing_stub(f"{self.__name__}:{attribute}")


class _Exec(importlib.abc.Loader):
    """Creates a prepared module (stub or hollow package) and runs nothing."""

    def __init__(self, make: Callable[[str], types.ModuleType]) -> None:
        self.make = make

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.make(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@dataclass
class WheelDepth:
    """The deep stand-in: what ``torch_npu.*`` imports resolve to (see the module docstring)."""

    tree: WheelTree
    stubs: tuple[Stub, ...] = STUBS
    hollow: tuple[Hollow, ...] = HOLLOW
    missing: list[str] = field(default_factory=list)  # reached but not in the table, first reach first
    loaded: list[str] = field(default_factory=list)  # torch_npu modules loaded from the wheel
    _device_before: dict[str, Any] = field(default_factory=dict)
    _installed: list[tuple[str, Any, str, Any]] = field(default_factory=list)
    _libraries: list[Any] = field(default_factory=list)
    schema_failures: list[str] = field(default_factory=list)  # yaml schemas torch could not define
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._by_module: dict[str, dict[str, Stub]] = {}
        for stub in self.stubs:
            if stub.kind == "attribute":
                self._by_module.setdefault(stub.module, {})[stub.attribute] = stub
            elif stub.kind != "schemas":
                raise ValueError(f"stub {stub.name}: unknown kind {stub.kind!r}")
        self._hollow = {entry.name for entry in self.hollow}
        self._natives = self.tree.native_modules()

    @property
    def top_level(self) -> tuple[str, ...]:
        """The top-level packages this depth serves (torch_npu through the stand-in)."""
        return TOP_LEVEL

    @property
    def path(self) -> list[str]:
        """The stand-in package's ``__path__``: the wheel's torch_npu/."""
        return [str(self.tree.package)]

    def missing_stub(self, qualified: str) -> MissingStub:
        with self._lock:
            if qualified not in self.missing:
                self.missing.append(qualified)
        return MissingStub(
            f"torch_npu {self.tree.version} reached {qualified}, which the stub table of npu_inductor_compat's "
            f"{PROVIDER_NAME} provider does not have (tools/simulated/torch_npu_wheel.py STUBS): add a stub modelled "
            "on its real source, or find why this code path is taken"
        )

    # -------------------------------------------------------------------------------------------- set up / undo
    def enter(self, standin: types.ModuleType, device_module: types.ModuleType) -> None:
        """Called when the stand-in package is created: give it the wheel's path; remember the device module; put
        the stubbed modules that are not torch_npu's (triton-ascend's) in place."""
        standin.__path__ = self.path
        # torch_npu/utils/cpp_extension.py derives PYTORCH_NPU_INSTALL_PATH from torch_npu.__file__: the unpacked
        # tree (its __init__.py is never run; include/ and lib/ are not unpacked)
        standin.__file__ = str(self.tree.package / "__init__.py")
        self._device_before = dict(device_module.__dict__)
        for name in self._by_module:
            if not name.startswith(f"{PACKAGE}."):
                self._install(name)
        for stub in self.stubs:
            if stub.kind == "schemas":
                self._libraries.append(stub.value(self))
        # What torch_npu's package initialisation registers of its operators (torch_npu/_init/core/module_loader.py
        # _load_registration_modules): their Meta kernels (fake-tensor tracing needs them: torch_npu 2.12's backend
        # traces its fused-attention patterns at load, reaching npu::_npu_dropout) and their exposure as
        # torch_npu.<op> (torch.ops.npu.<op>). Its Library objects are destroyed on exit, like the schemas.
        import torch

        for name in (META_REGISTRATIONS, CUSTOM_OPS):
            module = importlib.import_module(name)
            self._libraries.extend(value for value in vars(module).values() if isinstance(value, torch.library.Library))

    def _install(self, name: str) -> types.ModuleType:
        """A foreign stub module and its missing parents, in sys.modules and as attributes of their parents."""
        present = sys.modules.get(name)
        if present is not None:
            if isinstance(present, _StubModule):
                return present
            raise RuntimeError(f"{PROVIDER_NAME}: {name} is already imported ({present!r}); its stub would shadow it")
        module = self._make_stub_module(name)
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        if parent is None and parent_name:
            with contextlib.suppress(ImportError):
                parent = importlib.import_module(parent_name)
            if parent is None:
                parent = self._install(parent_name)
        if parent is None:
            old: Any = _NOTHING
        elif isinstance(parent, _StubModule):  # a stub parent answers only its table (anything else is MissingStub)
            old = vars(parent).get(child, _NOTHING)
        else:
            old = getattr(parent, child, _NOTHING)
        self._installed.append((name, parent, child, old))
        sys.modules[name] = module
        if parent is not None:
            setattr(parent, child, module)
        # a stub attribute that is itself a stub module of that name is importable as one (torch_npu 2.12.0.post3's
        # npu_triton_helpers.py: `import triton.language.extra.ascend.libdevice as libdevice`)
        for value in vars(module).values():
            submodule = getattr(value, "__name__", None) if isinstance(value, _StubModule) else None
            if submodule is not None and submodule.rpartition(".")[0] == name and submodule not in sys.modules:
                self._installed.append((submodule, None, "", _NOTHING))
                sys.modules[submodule] = value
        return module

    def exit(self, device_module: types.ModuleType | None) -> None:
        """Forget what torch_npu's code added to the simulated device module (torch_npu.npu.<submodules> and the
        attributes it sets, e.g. ``_initialized``) and the foreign stub modules; the stand-in restores the
        torch_npu entries of sys.modules."""
        for name, parent, child, old in reversed(self._installed):
            sys.modules.pop(name, None)
            if parent is not None:
                if old is _NOTHING:
                    with contextlib.suppress(AttributeError):
                        delattr(parent, child)
                else:
                    setattr(parent, child, old)
        self._installed.clear()
        for library in reversed(self._libraries):
            library._destroy()
        self._libraries.clear()
        before = self._device_before
        if device_module is None or not before:
            return
        for name in [name for name in device_module.__dict__ if name not in before]:
            delattr(device_module, name)
        for name, value in before.items():
            if device_module.__dict__.get(name, value) is not value:
                setattr(device_module, name, value)

    # ---------------------------------------------------------------------------------------------- resolving
    def find_spec(self, fullname: str) -> importlib.machinery.ModuleSpec:
        """The spec for a ``torch_npu.<...>`` module (never ``torch_npu`` itself nor ``torch_npu.npu``) or a module
        of the wheel's other top-level packages (:data:`TOP_LEVEL`)."""
        if fullname in self._hollow:  # its table entries, and its submodules from the wheel
            spec = importlib.machinery.ModuleSpec(fullname, _Exec(self._make_stub_module), is_package=True)
            spec.submodule_search_locations = [str(self._location(fullname))]
            return spec
        if fullname in self._by_module:
            return importlib.machinery.ModuleSpec(fullname, _Exec(self._make_stub_module), is_package=True)
        location = self._location(fullname)
        for candidate, package in ((location / "__init__.py", True), (location.with_suffix(".py"), False)):
            if candidate.is_file():
                found = importlib.util.spec_from_file_location(
                    fullname, candidate, submodule_search_locations=[str(location)] if package else None
                )
                if found is None:  # pragma: no cover - a .py file always has a spec
                    break
                with self._lock:
                    self.loaded.append(fullname)
                return found
        if location.is_dir():  # a folder without __init__.py: a namespace package, as Python would make it
            spec = importlib.machinery.ModuleSpec(fullname, _Exec(types.ModuleType), is_package=True)
            spec.submodule_search_locations = [str(location)]
            return spec
        if fullname in self._natives:
            raise self.missing_stub(fullname)  # a native module of the wheel that the table does not stub
        # not in this release at all (e.g. a module of another release's layout): what torch_npu itself would say
        raise ModuleNotFoundError(f"No module named {fullname!r} (torch_npu {self.tree.version})", name=fullname)

    def has_submodule(self, package: str, name: str) -> bool:
        """Whether the wheel has ``package.name`` as a module or package (for hollow packages)."""
        if package not in self._hollow:
            return False
        location = self._location(f"{package}.{name}")
        return location.with_suffix(".py").is_file() or location.is_dir()

    def _location(self, fullname: str) -> Path:
        return self.tree.root.joinpath(*fullname.split("."))

    def stub_module(self, name: str) -> types.ModuleType:
        """A module that has exactly its stub-table entries (none when the table lists none under its name)."""
        return self._make_stub_module(name)

    def _make_stub_module(self, name: str) -> types.ModuleType:
        module = _StubModule(name, self)
        for attribute, stub in self._by_module.get(name, {}).items():
            setattr(module, attribute, stub.value(self))
        return module


# ------------------------------------------------------------------------------------------------ events
@dataclass
class Events:
    """What torch_npu's codegen did, per kernel: every fallback it took from its main path (and the error it
    swallowed), and every check it ran on a kernel, with its result: "passed", "failed" (the compiler's error) or
    "error" (the check could not run). ``ttir_worker`` ran torch_npu's TTIR checks, in a triton-ascend process."""

    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    ttir_worker: Any = None  # kernel_check.TtirCheckWorker, once the TTIR-check record is applied
    # Inductor options torch_npu's loading changed: key -> {"before", "after"[, "codegen": what codegen uses]}
    config_changes: dict[str, dict[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pending: threading.local = field(default_factory=threading.local)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            found = {
                "fallbacks": list(self.fallbacks),
                "checks": list(self.checks),
                "config_changes": dict(self.config_changes),
            }
        if self.ttir_worker is not None:  # how the checks ran: the worker, its triton-ascend, what it bridged
            found["ttir_check"] = self.ttir_worker.describe()
        return found

    def by_kernel(self) -> dict[str, list[str]]:
        """kernel name -> what happened to it (its checks, then any fallback), in order."""
        found: dict[str, list[str]] = {}
        with self._lock:
            for event in self.checks:
                outcome = event["result"] if event["error"] is None else f"{event['result']}: {event['error']}"
                for kernel in event["kernels"] or ["(kernel unknown)"]:
                    found.setdefault(kernel, []).append(f"check {event['check']}: {outcome}")
            for event in self.fallbacks:
                for kernel in event["kernels"]:
                    found.setdefault(kernel, []).append(f"fallback {event['fallback']}: {event['error']}")
        return found


EVENTS = Events()


def depth_for(version: str | None = None) -> WheelDepth:
    """The deep stand-in for torch_npu ``version`` (default: the release paired with the installed torch).

    WheelUnavailable when no release is paired, the wheel cannot be had, or it requires another torch release."""
    import torch

    from npu_inductor_compat.version import parse_release

    release = version or paired_release(torch.__version__)
    tree = unpacked(release)
    if parse_release(torch.__version__) != parse_release(tree.torch):  # its _inductor patches that torch's internals
        raise WheelUnavailable(pairs.pair(release).refusal(torch.__version__))
    return WheelDepth(tree, stubs=STUBS, hollow=HOLLOW)  # the tables as they are now (tests edit them)


# ------------------------------------------------------------------------------------------------ the provider
BACKEND_MODULE = "torch_npu._inductor"  # importing it registers torch_npu's Inductor backend for "npu"
COMBINED_SCHEDULING = "torch_npu._inductor.codegen.npu_combined_scheduling:NPUCombinedScheduling"
LINEAR_SCHEDULING = "torch_npu._inductor.codegen.scheduling:NPUTritonScheduling"
INDEX_KERNEL = "torch_npu._inductor.codegen.triton:NPUIndexTritonKernel"
CODEGEN_COMMON = "torch._inductor.codegen.common"
WARM_POOL_ENV = "TORCH_WARM_POOL"
# torch_npu 2.7.1.post11's _inductor/ascend_npu_ir/ascend_npu_ir/config.py sets it (and allow_buffer_reuse=False) at
# import, which its triton backend reaches: Inductor then writes torch_compile_debug/ at every compile
DEBUG_TRACE = "trace.enabled"
HAS_TRITON = "torch.utils._triton:has_triton"
DYNAMO_UTILS = "torch_npu.utils._dynamo"  # torch_npu's dynamo set-up (what `import torch_npu` runs of it)
DEVICE_INTERFACES = "torch._dynamo.device_interface:device_interfaces"
# 2.7.1.post11 and 2.9.0.post9: every kernel runs `from torch_npu._inductor.runtime.triton_helpers import libdevice,
# extension, math as tl_math` (codegen/triton.py); the module binds `extension` only from tl.extra.cann
HELPERS_EXTENSION = f"{torch_npu_names.module_of('runtime-triton-helpers')}:extension"
EXTENSION_MODULE = "triton.language.extra.cann.extension"


@dataclass(frozen=True)
class ReleaseTargets:
    """Where this provider's records aim in one torch_npu release (each read in that wheel's ``_inductor``), and
    what its ``import torch_npu`` does that the stand-in does in its place. A target is None where the release has
    no such code (then the record is not made: there is nothing to replace or observe)."""

    # "module:Class.method": the TTIR check torch_npu runs on each linear kernel (fails without triton-ascend)
    ttir_check: str | None
    # "module:Class.method": tries the linear index kernel and falls back to no_linear on any exception
    linear_fallback: str | None
    # "module:Class.method": torch_npu's own Triton backend hash for a kernel's inductor_meta (triton-ascend's
    # triton_key and the active driver's backend); None: the kernel asks torch's triton_hash_with_backend, which
    # the simulated device's record (device.py simulated-triton-backend-hash) answers
    backend_hash: str | None
    # `import torch_npu` replaces torch.utils._triton.has_triton with torch_npu's (utils/_dynamo.py
    # add_dynamo_methods -> patch_has_triton), which its Inductor backend asks while loading
    has_triton_at_import: bool
    layout: str  # what the release's _inductor does here, in a sentence (why a target is None)
    # "module:extension": where the release's kernels import triton-ascend's `extension` from (its triton_helpers
    # binds it only from tl.extra.cann, which torch's triton never has); None: its kernels import no `extension`
    helpers_extension: str | None = None
    # compiler metadata the release's autotuner reads that triton-ascend 3.2.0 (the simulated compiler) does not
    # record: given to every simulated kernel (kernel_params.triton_ascend_compiled's ``recorded``)
    compiler_fields: tuple[tuple[str, Any], ...] = ()


_COMBINED_LAYOUT = (
    "codegen/npu_combined_scheduling.py NPUCombinedScheduling is registered for 'npu'; its codegen_node tries "
    "codegen/scheduling.py NPUTritonScheduling (the linear index kernel, checked by make_ttir_for_check) and falls "
    "back to the no_linear kernel"
)
# 2.9.0.post9, 2.13.0 and 2.14.0 (each read in its wheel): the combined layout, has_triton replaced at import
_COMBINED_TARGETS = ReleaseTargets(
    ttir_check=f"{LINEAR_SCHEDULING}.make_ttir_for_check",
    linear_fallback=f"{COMBINED_SCHEDULING}.codegen_node",
    backend_hash=None,
    has_triton_at_import=True,
    layout=_COMBINED_LAYOUT,
    helpers_extension=HELPERS_EXTENSION,
)
# 2.13.0 and 2.14.0 are built for a triton-ascend newer than 3.2.0: their autotuner's save_gpu_kernel (runtime/
# triton_heuristics.py) reads metadata.is_pure_simt, an NPUOptions field of later releases (False: a SIMD kernel)
_NEWER_TRITON_ASCEND = dataclasses.replace(_COMBINED_TARGETS, compiler_fields=(("is_pure_simt", False),))
# The torch_npu releases of PAIRED (and only those: the targets are read in their wheels, tests check them).
RELEASES: dict[str, ReleaseTargets] = {
    "2.7.1.post11": ReleaseTargets(
        ttir_check=f"{LINEAR_SCHEDULING}.make_ttir_for_check",
        linear_fallback=f"{COMBINED_SCHEDULING}.codegen_node",
        backend_hash=None,
        has_triton_at_import=False,  # its backend replaces it while loading (_inductor/utils.py patch_has_triton)
        layout=_COMBINED_LAYOUT,
        helpers_extension=HELPERS_EXTENSION,
    ),
    "2.9.0.post9": _COMBINED_TARGETS,
    "2.12.0.post3": ReleaseTargets(
        ttir_check=None,
        linear_fallback=None,
        backend_hash=f"{INDEX_KERNEL}.patch_triton_hash",
        has_triton_at_import=True,
        layout="codegen/scheduling.py NPUTritonScheduling is registered for 'npu' directly (the package has no "
        "npu_combined_scheduling.py): one index kernel, no linear/no_linear choice, no TTIR check",
    ),
    "2.13.0": _NEWER_TRITON_ASCEND,
    "2.14.0": _NEWER_TRITON_ASCEND,
}


def release_targets(release: str) -> ReleaseTargets:
    """The :data:`RELEASES` entry of torch_npu ``release``; WheelUnavailable when it has none."""
    if release not in RELEASES:
        raise WheelUnavailable(
            f"torch_npu {release}: this provider's records have no targets for it (torch_npu_wheel.py RELEASES: "
            f"{', '.join(RELEASES)})"
        )
    return RELEASES[release]


def _registered_classes() -> tuple[type, type, type | None]:
    """The (scheduling, Python wrapper, C++ wrapper) torch_npu itself registered for "npu" when its backend loaded."""
    from torch._inductor.codegen import common

    registered = common.device_codegens.get("npu")
    if registered is None:
        raise RuntimeError(f"{PROVIDER_NAME}: {BACKEND_MODULE} registered no 'npu' codegen backend")
    return registered.scheduling, registered.wrapper_codegen, registered.cpp_wrapper_codegen


def _load_backend(import_module: Callable[[str], Any]) -> None:
    from torch._inductor.codegen import common

    if sys.modules.get(PACKAGE) is None and not _standin_is_deep():
        raise RuntimeError(
            f"{PROVIDER_NAME}: torch_npu's Inductor code loads through the deep torch_npu stand-in: activate inside "
            "torch_npu_standin(depth='wheel')"
        )
    # torch_npu's _inductor/__init__.py warms Inductor's compile-worker pool at import unless TORCH_WARM_POOL=0:
    # subprocesses that codegen never uses (nothing is compiled here). Off while it loads, unless the user set it.
    warm = os.environ.get(WARM_POOL_ENV)
    os.environ[WARM_POOL_ENV] = warm if warm is not None else "0"
    try:
        import_module(BACKEND_MODULE)
    finally:
        if warm is None:
            os.environ.pop(WARM_POOL_ENV, None)
    if "npu" not in common.device_codegens:
        raise RuntimeError(f"{PROVIDER_NAME}: importing {BACKEND_MODULE} registered no 'npu' codegen backend")


def _standin_is_deep() -> bool:
    from npu_inductor_compat.tools.simulated import standin

    return standin._active is not None and standin._active.wheel is not None


def _new_kernels(before: set[str]) -> list[str]:
    from torch._inductor.virtualized import V

    names = getattr(getattr(V.graph, "wrapper_code", None), "src_to_kernel", {}).values()
    return [name for name in names if name not in before]


def _kernel_names() -> set[str]:
    from torch._inductor.virtualized import V

    try:
        return set(getattr(getattr(V.graph, "wrapper_code", None), "src_to_kernel", {}).values())
    except (AttributeError, AssertionError):
        return set()


def _observing_linear_fallback(events: Events) -> Callable[[Any], Any]:
    """NPUCombinedScheduling.codegen_node tries torch_npu's "linear" index kernel and, when that raises, logs at
    debug level and generates the stock-like "no_linear" kernel instead: record each such fallback with the
    exception, and attribute both it and the checks run meanwhile to the kernels the call defined (after a failed
    check: the no_linear kernel that replaced the checked one)."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def codegen_node(self: Any, node: Any) -> Any:
            linear = self._triton_scheduling
            linear_codegen = linear.codegen_node
            caught: list[BaseException] = []

            def observed(*args: Any, **kwargs: Any) -> Any:
                try:
                    return linear_codegen(*args, **kwargs)
                except Exception as err:
                    caught.append(err)
                    raise

            before = _kernel_names()
            events._pending.checks = []
            linear.codegen_node = observed
            try:
                return original(self, node)
            finally:
                del linear.codegen_node
                kernels = _new_kernels(before)
                checks, events._pending.checks = events._pending.checks, None
                nodes = sorted(child.get_name() for child in node.get_nodes())
                with events._lock:
                    for check in checks:
                        events.checks.append({**check, "kernels": kernels, "nodes": nodes})
                    if caught:
                        events.fallbacks.append(
                            {
                                "fallback": "linear -> no_linear",
                                "where": f"{COMBINED_SCHEDULING}.codegen_node",
                                "error": f"{type(caught[0]).__name__}: {caught[0]}",
                                "nodes": nodes,
                                "kernels": kernels,
                            }
                        )

        return codegen_node

    return replacement


TTIR_CHECK = (
    "torch_npu's TTIR check of each linear kernel (make_ttir_for_check: the kernel compiled to TTIR by "
    "triton-ascend's ast_to_ttir) needs triton-ascend, which never shares a process with torch's triton: it runs in "
    "a triton-ascend worker process (tools/simulated/kernel_check.py TtirCheckWorker), torch_npu's own function on "
    "the kernel source its scheduling passed"
)


class TtirCheckFailed(RuntimeError):
    """torch_npu's TTIR check rejected a kernel (or could not run): raised where torch_npu's own check raises, so
    its scheduling takes the fallback it takes on hardware (the message gives the compiler's error)."""


def _replacing_ttir_check(events: Events, worker: Any) -> Callable[[Any], Any]:
    """``make_ttir_for_check`` sent to ``worker`` (kernel_check.TtirCheckWorker): each check is recorded with its
    result, and raises :class:`TtirCheckFailed` unless it passed."""

    def replacement(original: Any) -> Any:
        events.ttir_worker = worker

        @wraps_original(original)
        def make_ttir_for_check(self: Any, src_code: str) -> None:
            answer = worker.check(src_code)
            check = {
                "check": "ttir",
                "where": worker.target,
                "result": answer["result"],  # "passed", "failed" (the compiler's error) or "error" (did not run)
                "error": answer["error"],
                "seconds": answer["seconds"],
            }
            pending = getattr(events._pending, "checks", None)
            if pending is None:
                with events._lock:
                    events.checks.append({**check, "kernels": [], "nodes": []})
            else:
                pending.append(check)
            if answer["result"] != "passed":
                raise TtirCheckFailed(f"torch_npu's TTIR check {answer['result']}: {answer['error']}")

        return make_ttir_for_check

    return replacement


def _ttir_check_record(events: Events, release: str, target: str) -> Patch:
    from npu_inductor_compat.tools.simulated.ttir_check import TtirCheckWorker

    worker = TtirCheckWorker(release, target)  # no process until the first check
    return Patch(
        id="torch-npu-wheel-ttir-check",
        layer=PROVIDER_NAME,
        why=TTIR_CHECK + "; in this process it would fail for every kernel, and torch_npu would silently fall back "
        "to its 'no_linear' kernel. Each check's result is reported per kernel; a failed one raises where "
        "torch_npu's check raises, so its fallback is taken (and reported) as on hardware",
        upstream=f"{target} (torch_npu {release} codegen/scheduling.py)",
        remove_when="never while triton-ascend and torch's triton cannot share a process",
        changes=(Change(target, _replacing_ttir_check(events, worker)),),
        refresh=worker.close,  # after undo: the worker stops (a check would start it again)
    )


def _torch_npus_has_triton(_original: Any) -> Any:
    """Run torch_npu's own patch_has_triton (from the wheel) and return what it put in place."""
    from torch.utils import _triton

    importlib.import_module(DYNAMO_UTILS).patch_has_triton()
    return _triton.has_triton


CANN_VERSION = "torch.version:cann"
COLLECT_ENV = "torch_npu.utils.collect_env"
NO_CANN_VERSION = "not known"  # what torch_npu's get_cann_version answers where no CANN install info is found


def _cann_version(_old: Any) -> str:
    """torch_npu's own answer where $ASCEND_HOME_PATH names a CANN toolkit; else the one it gives on a host without
    CANN's install info (without walking the working directory, which it does when the variable is unset)."""
    if os.environ.get("ASCEND_HOME_PATH"):
        return str(importlib.import_module(COLLECT_ENV).get_cann_version())
    return NO_CANN_VERSION


def backend_records(release: str) -> tuple[Patch, ...]:
    """What ``import torch_npu`` and torch_npu's first Inductor compile do on an Ascend host, as records: the
    device interface registered for "npu" (the simulated NPU's: torch_npu's own wraps its native device calls),
    torch's has_triton replaced by torch_npu's where ``release``'s ``import torch_npu`` does that
    (:data:`RELEASES`), then torch_npu's Inductor backend loaded (``import torch_npu._inductor``: its registration
    for "npu" and its patches of torch). Applied before this package activates, so activation's probes see
    torch_npu's state; the registries it writes are journaled (torch_npu's patches of torch have no undo)."""
    from npu_inductor_compat.common.layer_shared import BACKEND_REGISTRIES
    from npu_inductor_compat.tools.simulated import device

    targets = release_targets(release)

    def register_interface(register: Any) -> None:
        register("npu", device._interface_for_provider())

    has_triton = Patch(
        id="torch-npu-wheel-has-triton",
        layer=PROVIDER_NAME,
        why=f"import torch_npu ({release}) replaces torch's has_triton with its own, which counts 'npu' as a Triton "
        "device; torch_npu's Inductor backend asks it while loading and registers nothing for 'npu' when it says no "
        "(no CUDA/XPU device here)",
        upstream=f"{DYNAMO_UTILS} patch_has_triton (add_dynamo_methods, run by torch_npu's __init__: "
        "torch_npu/_init/patches/dynamo_patches.py)",
        remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
        changes=(Change(HAS_TRITON, _torch_npus_has_triton),),
    )
    cann_version = Patch(
        id="torch-npu-wheel-cann-version",
        layer=PROVIDER_NAME,
        why=f"import torch_npu ({release}) sets torch.version.cann, which torch_npu's Inductor reads in its cache key "
        "(_inductor/codegen/common.py: CacheBase.get_system, reached by template autotuning: flex attention, "
        f"sdpa); unset, those lowerings fail with AttributeError. Its value: {NO_CANN_VERSION!r}, torch_npu's "
        "get_cann_version() where no CANN install info is found, or its own answer under $ASCEND_HOME_PATH",
        upstream=f"{COLLECT_ENV} _add_collect_env_methods (run by torch_npu's __init__: torch_npu/_init/patches/"
        "api_patches.py)",
        remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
        changes=(Change(CANN_VERSION, _cann_version, must_exist=False),),
    )
    return (
        Patch(
            id="torch-npu-wheel-device-interface",
            layer=PROVIDER_NAME,
            why="import torch_npu registers its dynamo device interface; torch_npu's Inductor backend asks for it "
            "while loading (has_triton, get_interface_for_device)",
            upstream="torch_npu/utils/_dynamo.py _dynamo_register_interface_for_device (run by torch_npu's __init__)",
            remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
            changes=(
                Change(
                    "torch._dynamo.device_interface:register_interface_for_device",
                    register_interface,
                    kind="registration",
                    key="npu",
                    touches=(DEVICE_INTERFACES,),
                ),
            ),
        ),
        *((has_triton,) if targets.has_triton_at_import else ()),
        cann_version,
        Patch(
            id="torch-npu-wheel-backend",
            layer=PROVIDER_NAME,
            why="torch_npu's own Inductor backend: importing torch_npu._inductor registers its scheduling and "
            "wrappers for 'npu' and applies its patches, as on an Ascend host",
            upstream="torch_npu/_inductor/__init__.py _load_backend (the released wheel's)",
            remove_when="never: this is how torch_npu loads its backend",
            changes=(
                Change(
                    "importlib:import_module",
                    _load_backend,
                    kind="registration",
                    key="npu",
                    # torch_npu 2.9+ registers its own dynamo interface for "npu" while loading
                    touches=(*BACKEND_REGISTRIES, f"{CODEGEN_COMMON}:device_op_overrides_dict", DEVICE_INTERFACES),
                ),
            ),
        ),
    )


def _backend_hash_without_driver(original: Any) -> Any:
    """torch_npu's kernel hashes triton-ascend's key with the active driver's backend: here, with this provider's
    name instead (no triton-ascend, no driver; as device.py's simulated-triton-backend-hash does for torch's)."""
    from npu_inductor_compat.tools.simulated import device

    @wraps_original(original)
    def patch_triton_hash(self: Any) -> str:
        import hashlib

        return hashlib.sha256(f"{device._triton_key()}-{PROVIDER_NAME}".encode()).hexdigest()

    return patch_triton_hash


HELPERS_EXTENSION_WHY = (
    "the kernels torch_npu {release} generates import `extension` (with libdevice) from its triton_helpers, which "
    "binds it only from tl.extra.cann (triton-ascend releases after 3.2.0: its Ascend extension ops); torch's triton "
    "(and triton-ascend 3.2.0) has no tl.extra.cann, so loading any kernel module fails (cannot import name "
    "'extension'), and the C++ wrapper loads each kernel module to save its launch parameters. The name is bound to "
    "a module with no ops: nothing is compiled here, and an op looked up on it raises MissingStub naming it (a "
    "kernel of indirect indexing names gather_out_to_ub, index_put, scatter_ub_to_out or custom only inside its "
    "@triton.jit body, which is never compiled here)"
)


def _active_depth() -> WheelDepth:
    from npu_inductor_compat.tools.simulated import standin

    use = standin._active
    if use is None or use.wheel is None:
        raise RuntimeError(f"{PROVIDER_NAME}: torch_npu's code runs inside torch_npu_standin(depth='wheel')")
    depth: WheelDepth = use.wheel
    return depth


def _extension_without_ops(old: Any) -> Any:
    """triton-ascend's ``extension`` where torch_npu's triton_helpers has none: a stub module with no ops (a real
    one, bound because this process's triton has tl.extra.cann, stays)."""
    from npu_inductor_compat.patching import ABSENT

    if old is not ABSENT:
        return old
    return _active_depth().stub_module(EXTENSION_MODULE)


def _records(events: Events, release: str) -> tuple[Patch, ...]:
    """The provider's records for torch_npu ``release``: the simulated device's, and those of :data:`RELEASES`
    whose target the release has."""
    from npu_inductor_compat.tools.simulated import device

    targets = release_targets(release)
    records = [*device.PROVIDER.records()]  # the device is still the simulated one: no Triton driver, no launch
    if targets.backend_hash is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-backend-hash",
                layer=PROVIDER_NAME,
                why="torch_npu's index kernel hashes its Triton backend itself for each kernel's inductor_meta, "
                "asking triton-ascend's triton_key and the active Triton driver: neither is here (torch's Triton has "
                "no triton.compiler.compiler.triton_key since 3.5, and the simulated NPU has no driver)",
                upstream=f"{targets.backend_hash} (torch_npu {release} codegen/triton.py)",
                remove_when="never while the simulated NPU has no Triton driver (codegen only)",
                changes=(Change(targets.backend_hash, _backend_hash_without_driver),),
            )
        )
    if targets.helpers_extension is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-helpers-extension",
                layer=PROVIDER_NAME,
                why=HELPERS_EXTENSION_WHY.format(release=release),
                upstream=f"{targets.helpers_extension} (torch_npu {release} runtime/triton_helpers.py binds it from "
                "tl.extra.cann.extension: triton-ascend third_party/ascend/language/cann/__init__.py and "
                "cann/extension/__init__.py; kernel_check.py BRIDGES gives triton-ascend 3.2.0 workers the same)",
                remove_when="never while torch's triton has no tl.extra.cann (the codegen process never has "
                "triton-ascend)",
                changes=(Change(targets.helpers_extension, _extension_without_ops, must_exist=False),),
            )
        )
    if targets.ttir_check is not None:
        records.append(_ttir_check_record(events, release, targets.ttir_check))
    if targets.linear_fallback is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-linear-fallback",
                layer=PROVIDER_NAME,
                why="torch_npu falls back from its linear index kernel to the no_linear one on any exception, "
                "logging only at debug level: each fallback is recorded with the error and the kernels it produced",
                upstream=f"{targets.linear_fallback} (torch_npu {release} codegen/npu_combined_scheduling.py)",
                remove_when="never while torch_npu falls back silently",
                changes=(Change(targets.linear_fallback, _observing_linear_fallback(events)),),
            )
        )
    return tuple(records)


def provider(events: Events | None = None, release: str | None = None) -> DeviceProvider:
    """The ``torch_npu-wheel`` device provider (use it inside ``torch_npu_standin(depth="wheel")``): the simulated
    NPU plays the device; torch_npu's released code (``release``, default: the one paired with the installed torch,
    when its records are asked for) generates the code; ``events`` (default :data:`EVENTS`) receives its fallbacks
    and checks."""
    import torch

    from npu_inductor_compat.tools.simulated import device

    chosen = EVENTS if events is None else events
    raw_stream = Target.parse(torch_npu_names.qualname("raw-stream"))
    return DeviceProvider(
        name=PROVIDER_NAME,
        device_interface=device._interface_for_provider,
        raw_stream_import=f"from {raw_stream.module} import {raw_stream.qualname} as {{name}}",
        summary="torch_npu's released Inductor code (pure Python, from its wheel) on the simulated NPU; codegen only",
        codegen_classes=_registered_classes,
        records=lambda: _records(chosen, release or paired_release(torch.__version__)),
    )


def seed_first_candidate(autotuner: Any) -> None:
    """Save ``autotuner``'s launch params as torch_npu's autotuner leaves them when it runs its first candidate.

    torch_npu 2.7.1.post11 and 2.9.0.post9 compile a kernel without its runtime-block arguments (e.g. ``X0BLOCK``:
    inductor_meta ``runtime_block_arg_names``) and pass them at launch: their autotuner builds a plan of candidates
    (``build_candidate_plan``: each config, less its runtime blocks, is a compiled variant), picks one
    (``_set_best_candidate``: its runtime blocks become ``best_runtime_blocks``) and saves the params of the
    variant's launcher, which carry those blocks (``runtime_blocks``) for the C++ wrapper to declare. Here candidate 0
    is picked, as torch_npu's autotuner picks it when the plan has one candidate (or deterministic algorithms are on),
    and the simulated launcher is its variant's. An autotuner without candidates (2.12.0.post3, stock Inductor's)
    saves its first config (kernel_params.save_first_config)."""
    from npu_inductor_compat.tools.simulated import kernel_params

    if not hasattr(autotuner, "_set_best_candidate"):
        kernel_params.save_first_config(autotuner)
        return
    build_candidate_plan = torch_npu_names.first_defined("autotuner-candidate-plan")
    heuristics = sys.modules[build_candidate_plan.__module__]
    plan = build_candidate_plan(autotuner.configs, autotuner.runtime_block_arg_names)
    candidate = plan["candidate_entries"][0]
    variant = heuristics.config_from_dict(plan["variants"][candidate["variant_id"]]["config"])
    launcher = kernel_params.simulated_launcher(autotuner, variant)
    autotuner.candidate_plan = plan
    autotuner._set_best_candidate(candidate, launcher)
    autotuner.save_gpu_kernel(0, launcher)


def _restore_npu_entries(mapping: dict[str, Any], before: dict[str, Any]) -> None:
    """Put back the "npu" and "npu:<index>" entries of ``mapping`` as they were (others, e.g. those torch's own
    lazy registration adds meanwhile, stay)."""
    for key in [key for key in mapping if key == "npu" or key.startswith("npu:")]:
        if key in before:
            mapping[key] = before[key]
        else:
            del mapping[key]


@contextlib.contextmanager
def wheel_run(version: str | None = None) -> Iterator[tuple[Any, DeviceProvider, Events]]:
    """The deep stand-in, torch_npu's backend loaded (:func:`backend_records`) and this provider selected; yields
    ``(StandInUse, provider, events)``. Activate (and deactivate) inside the block. On exit the provider override,
    the registries torch_npu's loading wrote, and the stand-in are restored."""
    import torch._inductor.config as inductor_config
    from torch._dynamo import device_interface

    from npu_inductor_compat.common import providers
    from npu_inductor_compat.patching import Journal
    from npu_inductor_compat.tools.simulated import device, kernel_params
    from npu_inductor_compat.tools.simulated.standin import torch_npu_standin

    device.setup()
    events = Events()
    with torch_npu_standin(depth="wheel", wheel_version=version) as use, contextlib.ExitStack() as stack:
        release = use.wheel.tree.version
        chosen = provider(events, release)
        journal = Journal()
        before = inductor_config.get_config_copy()
        stack.callback(inductor_config.load_config, before)  # torch_npu's config edits end with the run
        # torch_npu 2.9+ registers its dynamo interface for "npu" and "npu:0" ... "npu:31" while loading (utils/
        # _dynamo.py _dynamo_register_interface_for_device): the journal restores "npu", this the others
        interfaces = dict(device_interface.device_interfaces)
        stack.callback(_restore_npu_entries, device_interface.device_interfaces, interfaces)
        journal.apply(backend_records(release))
        stack.callback(journal.undo)
        after = inductor_config.get_config_copy()
        events.config_changes = {
            key: {"before": repr(before.get(key)), "after": repr(value)}
            for key, value in after.items()
            if before.get(key) != value
        }
        if after.get(DEBUG_TRACE):
            # codegen keeps what it generates in --out; Inductor's debug trace would write torch_compile_debug/
            # into the working directory at every compile (it changes no generated code)
            stack.enter_context(inductor_config.patch({DEBUG_TRACE: False}))
            change = events.config_changes.setdefault(
                DEBUG_TRACE, {"before": repr(before.get(DEBUG_TRACE)), "after": repr(after.get(DEBUG_TRACE))}
            )
            change["codegen"] = "False: the debug trace writes into the working directory"
        previous = providers.set_provider(chosen)
        stack.callback(providers.set_provider, previous)
        # torch_npu's autotuner saves a kernel's launch params from what triton-ascend's compiler recorded
        recorded = dict(release_targets(release).compiler_fields)
        stack.enter_context(kernel_params.triton_ascend_compiled(seed_first_candidate, recorded))
        yield use, chosen, events
