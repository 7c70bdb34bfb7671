"""Fix records for launching triton-ascend kernels from the C++ wrapper (docs/npu-launch.md)."""

# Importing this module imports no torch module; the records' callables do, when applied.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.device.npu_launch import NPU_WRAPPER_HEADER
from npu_inductor_compat.patching import Change, Patch, wraps_original

DEVICE = "npu"

# torch_npu's NPU autotuner overrides save_gpu_kernel without calling upstream's (module per release line:
# 2.7.1.post11 and 2.9.0.post9 runtime/triton_heuristics.py, 2.12.0.post3 npu_triton_heuristics.py).
TORCH_NPU_AUTOTUNERS = torch_npu_names.candidates("autotuner-save-kernel")


def store_launch_metadata(kernel: str, launcher: Any) -> None:
    """Copy ``launcher.bin.metadata``'s launch fields (validated) into the params saved for ``kernel``."""
    from torch._inductor.codecache import CudaKernelParamCache

    from npu_inductor_compat.common.device.kernel_metadata import read_launch_metadata

    params = CudaKernelParamCache.get(kernel)
    if params is None:
        raise RuntimeError(f"kernel {kernel!r}: save_gpu_kernel stored no params to add launch metadata to")
    params.update(read_launch_metadata(kernel, launcher.bin.metadata).as_params())


# triton-ascend's binary, under its backend's binary_ext (python/triton/backends/ascend/compiler.py AscendBackend)
NPU_BINARY = "npubin"


class _BinaryAsCubin:
    """A launcher as torch's save_gpu_kernel reads it, its triton-ascend binary also under "cubin": torch picks the
    binary by device type and falls back to "cubin" for any device it does not know (triton_heuristics.py
    save_gpu_kernel), and torch_npu stores its npubin in that slot too (NPUCachingAutotuner.save_gpu_kernel:
    ``CudaKernelParamCache.set(key, params, binary, bin_type='cubin')``)."""

    def __init__(self, launcher: Any) -> None:
        self._launcher = launcher
        self.bin = _BinaryView(launcher.bin)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._launcher, name)


class _BinaryView:
    def __init__(self, binary: Any) -> None:
        self._binary = binary
        self.asm = {**binary.asm, "cubin": binary.asm[NPU_BINARY]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._binary, name)


def _launcher_argument(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str | int | None, Any]:
    """(where the launcher is passed, the launcher): (stream, launcher) on every line; torch_npu 2.12 names them
    input_stream, input_launcher."""
    if len(args) > 1:
        return 1, args[1]
    for name in ("launcher", "input_launcher"):
        if name in kwargs:
            return name, kwargs[name]
    return None, None


def _saving_launch_metadata(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def save_gpu_kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(getattr(self, "device_props", None), "type", None) != DEVICE:
            return original(self, *args, **kwargs)
        where, launcher = _launcher_argument(args, kwargs)
        asm = getattr(getattr(launcher, "bin", None), "asm", None)
        if isinstance(asm, dict) and NPU_BINARY in asm and "cubin" not in asm:
            # torch's own autotuner (stock Inductor's kernels, torch's templates under torch_npu) on an npu kernel
            viewed = _BinaryAsCubin(launcher)
            if isinstance(where, int):
                args = (*args[:where], viewed, *args[where + 1 :])
            elif where is not None:
                kwargs = {**kwargs, where: viewed}
        result = original(self, *args, **kwargs)
        store_launch_metadata(self.inductor_meta["kernel_name"], launcher)
        return result

    return save_gpu_kernel


# ``autotuner-kernel-metadata``: the params the autotuner saves for each kernel carry its launch metadata (workspace,
# locks, mix mode, SIMT) to the C++ wrapper. Upstream's ``CachingAutotuner.save_gpu_kernel`` keeps only CUDA's
# fields; torch_npu's own autotuner copies them on its 2.7.1 line only.
AUTOTUNER_KERNEL_METADATA = Patch(
    id="autotuner-kernel-metadata",
    proven_by=(
        "tests/common/device/test_npu_launch.py::test_launch_block_matches_the_golden_shared_by_every_torch_line",
        "tests/common/device/test_kernel_metadata.py::test_torchs_own_autotuner_finds_triton_ascends_binary_for_an_npu_kernel",
    ),
    layer="fix",
    why=(
        "the C++ wrapper sizes each kernel's workspace and locks from the compiler's metadata, but the saved kernel "
        "params carry only CUDA's fields, so the sizes never reach it"
    ),
    upstream="torch_npu v2.7.1 NPUCachingAutotuner.save_gpu_kernel (issue 4431); missing from its 2.9 and 2.12 lines",
    remove_when="never while upstream's autotuner saves only CUDA launch fields",
    changes=(
        Change("torch._inductor.runtime.triton_heuristics:CachingAutotuner.save_gpu_kernel", _saving_launch_metadata),
        *(Change(target, _saving_launch_metadata, optional=True) for target in TORCH_NPU_AUTOTUNERS),
    ),
)


def _replaced_cpp_wrapper(current: Any) -> bool:
    """Whether ``current`` is a triton-family NPU C++ wrapper this fix replaces: none, the placeholder, or the
    triton C++ wrapper the active device provider declares (torch_npu's). Other backends' wrappers stay."""
    from npu_inductor_compat.common.composition.providers import active_provider
    from npu_inductor_compat.common.device.npu_codegen import NpuCppWrapperPending

    if current is None or (isinstance(current, type) and issubclass(current, NpuCppWrapperPending)):
        return True
    provider = active_provider()
    if provider is None or provider.codegen_classes is None:
        return False
    return current is provider.codegen_classes()[2]


def _registering_npu_cpp_wrapper(wrapper_class: Callable[[], type]) -> Callable[[Any], None]:
    def register(register_backend_for_device: Any) -> None:
        """Swap the C++ wrapper of the "npu" backend registration, keeping its other classes; the registry entry
        is journaled, so undo restores the previous registration exactly. A backend with its own C++ wrapper
        (ascendc) or no "npu" registration at all is left alone."""
        import dataclasses

        from torch._inductor.codegen.common import device_codegens

        entry = device_codegens.get(DEVICE)
        if entry is not None and _replaced_cpp_wrapper(entry.cpp_wrapper_codegen):
            device_codegens[DEVICE] = dataclasses.replace(entry, cpp_wrapper_codegen=wrapper_class())

    return register


def uses_npu_cpp_wrapper(wrapper_class: type) -> bool:
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    return get_wrapper_codegen_for_device(DEVICE, cpp_wrapper=True) is wrapper_class


def _autotuning_at_compile_time(wrapper_class: Callable[[], type]) -> Callable[[Any], Any]:
    return lambda original: _autotune_at_compile_time(original, wrapper_class)


def _autotune_at_compile_time(original: Callable[..., Any], wrapper_class: Callable[[], type]) -> Callable[..., Any]:
    """The launch code is generated from each kernel's saved metadata, so npu graphs compile and save their kernels
    at compile time. Without this, 2.7-2.11 run a first Python pass with real inputs, and 2.12+ defer compilation to
    run time inside the C++ (where the metadata would only be known after the code is generated)."""

    @wraps_original(original)
    def codegen_with_cpp_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if DEVICE in getattr(self, "device_types", ()) and uses_npu_cpp_wrapper(wrapper_class()):
            from torch._inductor import config

            with config.patch({"triton.autotune_at_compile_time": True}):
                return original(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    return codegen_with_cpp_wrapper


TORCH_NPU_HOME_ENV = "NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME"  # a directory with torch_npu's include/ and lib/
ASCEND_HOME_ENV = "ASCEND_HOME_PATH"  # CANN's own variable (set_env.sh): include/ and lib64/ with libascendcl


def installed_torch_npu() -> Any:
    """The installed torch_npu package's directory (with its ``include/torch_npu``), located and never imported;
    None when there is none."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("torch_npu")  # top-level lookup: runs no torch_npu code
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "include" / "torch_npu").is_dir():
            return Path(location)
    return None


def torch_npu_home() -> Any:
    """The directory holding torch_npu's ``include/`` and ``lib/``: $NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME, else the
    installed torch_npu package (located, never imported)."""
    import os
    from pathlib import Path

    from npu_inductor_compat.common.device.npu_cpp_wrapper import NpuLaunchError

    explicit = os.environ.get(TORCH_NPU_HOME_ENV)
    if explicit:
        home = Path(explicit)
        if not (home / "include" / "torch_npu").is_dir() or not (home / "lib").is_dir():
            raise NpuLaunchError(f"{TORCH_NPU_HOME_ENV}={explicit} has no include/torch_npu/ and lib/")
        return home
    installed = installed_torch_npu()
    if installed is not None:
        return installed
    raise NpuLaunchError(
        "cannot build the NPU C++ wrapper: torch_npu's headers and libtorch_npu were not found (install torch_npu, "
        f"or set {TORCH_NPU_HOME_ENV} to a directory with its include/ and lib/)"
    )


def npu_build_options() -> tuple[list[str], list[str], list[str], list[str]]:
    """(include dirs, library dirs, libraries, linker flags) the NPU C++ wrapper is built with: torch_npu's headers
    (and the ACL headers it ships, first, as torch_npu's own cpp_builder orders them), libtorch_npu (the workspace
    allocator, the stream getter) and CANN's libascendcl (the launch), found again at load time through rpath."""
    import os
    from pathlib import Path

    home = torch_npu_home()
    include = home / "include"
    includes = [str(path) for path in (include, include / "third_party" / "acl" / "inc") if path.is_dir()]
    library_dirs = [str(home / "lib")]
    ascend = os.environ.get(ASCEND_HOME_ENV)
    if ascend:
        includes += [str(Path(ascend) / "include")] if (Path(ascend) / "include").is_dir() else []
        library_dirs.append(str(Path(ascend) / "lib64"))
    # linker flags as Inductor's builder takes them (it adds the leading "-", and drops them when only compiling)
    return includes, library_dirs, ["torch_npu", "ascendcl"], [f"Wl,-rpath,{path}" for path in library_dirs]


def _building_with_npu_libraries(original: Callable[..., Any]) -> Callable[..., Any]:
    """Inductor's per-device C++ build options know cuda and xpu; "npu" gets torch_npu's and ACL's."""

    @wraps_original(original)
    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        options = original(*args, **kwargs)
        device_type = kwargs.get("device_type", args[0] if args else None)
        if device_type != DEVICE:
            return options
        definitions, include_dirs, cflags, ldflags, library_dirs, libraries, passthrough = options
        includes, npu_library_dirs, npu_libraries, linker = npu_build_options()
        return (
            definitions,
            [*include_dirs, *includes],
            cflags,
            [*ldflags, *linker],
            [*library_dirs, *npu_library_dirs],
            [*libraries, *npu_libraries],
            passthrough,
        )

    return get_cpp_torch_device_options


def _precompiling_the_common_header(original: Callable[..., Any]) -> Callable[..., Any]:
    """Inductor precompiles ``torch/csrc/inductor/cpp_wrapper/<device>.h`` (lines from 2.9); npu has none."""

    @wraps_original(original)
    def _get_cpp_wrapper_header(device: str, aot_mode: bool = False) -> Any:
        if device.split(":", maxsplit=1)[0] == DEVICE and not aot_mode:
            return NPU_WRAPPER_HEADER
        return original(device, aot_mode)

    return _get_cpp_wrapper_header


# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: the lines up to 2.11 (v2_7_1, v2_9)
def npu_cpp_wrapper() -> type:
    """The NPU C++ wrapper for lines whose Inductor asks for one device include (up to 2.12)."""
    from npu_inductor_compat.common.device.npu_cpp_wrapper import CppWrapperNpu

    return CppWrapperNpu


def npu_cpp_wrapper_split_includes() -> type:
    """The NPU C++ wrapper for lines whose Inductor asks for the JIT and AOT includes separately (from 2.13)."""
    from npu_inductor_compat.common.device.npu_cpp_wrapper import CppWrapperNpuSplitIncludes

    return CppWrapperNpuSplitIncludes


# For the lines whose Inductor precompiles the device's cpp_wrapper header (2.9 and newer).
PRECOMPILED_HEADER_CHANGE = Change("torch._inductor.codecache:_get_cpp_wrapper_header", _precompiling_the_common_header)


def line_fixes(adapters: LineAdapters) -> tuple[Patch, ...]:
    """This module's records for a line: the metadata its launches read, then the launch with the line's wrapper."""
    return (AUTOTUNER_KERNEL_METADATA, cpp_wrapper_workspace_locks(adapters))


def cpp_wrapper_workspace_locks(adapters: LineAdapters) -> Patch:
    """The record, with the running line's NPU C++ wrapper class and its extra changes.

    ``cpp-wrapper-workspace-locks``: device "npu" gets this package's C++ wrapper (``npu_cpp_wrapper``), which
    allocates the workspace and locks on the launch stream and launches through ACL. torch_npu's 2.9.0.post9 and
    2.12.0.post3 wrappers pass NULL for both; its 2.7.1 wrapper fills the locks with a blocking copy.
    """
    return Patch(
        id="cpp-wrapper-workspace-locks",
        proven_by=(
            "tests/tools/codegen/test_codegen.py::test_without_the_launch_fix_a_cpp_wrapper_graph_fails_naming_the_fix",
            "tests/common/device/test_npu_wrapper_run.py::test_workspace_and_locks_never_alias_and_are_never_freed_before_their_launch",
        ),
        layer="fix",
        why=(
            "triton-ascend kernels can need per-block workspace and sync-block lock memory; the NPU C++ wrapper must "
            "allocate both, initialise the locks in stream order and pass them (torch_npu's passes NULL on 2.9/2.12 "
            "and fills the locks with a blocking copy on 2.7.1)"
        ),
        upstream=(
            "torch_npu v2.7.1 cpp_wrapper_npu.py generate_args_decl (issue 4431); missing from its 2.9 and 2.12 lines"
        ),
        remove_when="torch_npu's C++ wrapper initialises workspace and locks on the launch stream on every line",
        # the launch reads the metadata that record stores; without it every kernel would launch as "no workspace"
        requires=(AUTOTUNER_KERNEL_METADATA.id,),
        changes=(
            Change(
                "torch._inductor.codegen.common:register_backend_for_device",
                _registering_npu_cpp_wrapper(adapters.cpp_wrapper_class),
                kind="registration",
                key=DEVICE,
                touches=("torch._inductor.codegen.common:device_codegens",),
            ),
            Change(
                "torch._inductor.graph:GraphLowering.codegen_with_cpp_wrapper",
                _autotuning_at_compile_time(adapters.cpp_wrapper_class),
            ),
            Change("torch._inductor.cpp_builder:get_cpp_torch_device_options", _building_with_npu_libraries),
            *adapters.cpp_wrapper_changes,
        ),
    )
