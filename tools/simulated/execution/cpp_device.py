"""The emulated NPU runtime loaded into this process: its ACL's launches run by the emulated device, and the kernels it
runs, as the autotuner saved them for the C++ wrapper."""

# The emulated ACL (emulated_acl.cpp) hands each launch, when its stream reaches it, to a runner: here
# device_launch.Device, which reads the packed argument struct by the kernel's signature and runs the kernel in
# Triton's interpreter. The kernels are what each autotuner saves for the C++ wrapper (CudaKernelParamCache.set, with
# the launch metadata the autotuner-kernel-metadata fix adds), with the autotuner's interpreted function.

from __future__ import annotations

import ctypes
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated.execution.device_launch import Device, DeviceKernel

RUNNER = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64
)


@dataclass
class Ran:
    """One launch the device ran: its kernel, blocks, what went wrong (None: nothing) and the seconds it took."""

    kernel: str
    blocks: int
    error: str | None
    seconds: float


@dataclass
class Saved:
    """Each kernel's params as its autotuner saved them for the C++ wrapper, and its autotuner, by kernel name, since
    they were last taken (a C++ wrapper's graph takes its own when Inductor has generated it)."""

    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    autotuners: dict[str, Any] = field(default_factory=dict)

    def take(self) -> dict[str, tuple[dict[str, Any], Any]]:
        found = {name: (params, self.autotuners.get(name)) for name, params in self.params.items()}
        self.params.clear()
        return found


SAVED = Saved()


def _saving(original: Any) -> Any:
    set_params = original.__func__  # CudaKernelParamCache.set is a classmethod

    @wraps_original(original)
    def set_(cls: Any, key: str, params: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        SAVED.params[key] = params  # the same dict: the launch metadata is added to it after this call
        return set_params(cls, key, params, *args, **kwargs)

    return classmethod(set_)


def _keeping_autotuner(original: Any) -> Any:
    @wraps_original(original)
    def launch_params(autotuner: Any, config: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = original(autotuner, config)
        SAVED.autotuners[params["mangled_name"]] = autotuner
        return params

    return launch_params


SAVED_RECORD = Patch(
    id="execute-saved-kernels",
    layer="capture",
    why="codegen --execute runs a C++ wrapper's kernels on the emulated device: it needs each kernel's saved params "
    "(its arguments, config and launch metadata) and its autotuner's function, which Inductor forgets once the "
    "wrapper is generated",
    upstream="torch._inductor.codecache.CudaKernelParamCache.set (what save_gpu_kernel stores for the C++ wrapper)",
    remove_when="never: this is the codegen command's execution",
    changes=(
        Change("torch._inductor.codecache:CudaKernelParamCache.set", _saving),
        Change("npu_inductor_compat.tools.simulated.codegen.kernel_params:launch_params", _keeping_autotuner),
    ),
)


def device_kernel(params: Mapping[str, Any], autotuner: Any, meta: Mapping[str, Any] | None = None) -> DeviceKernel:
    """The device's copy of a compiled kernel: its interpreted function, the struct's arguments (name, Triton type),
    the values compiled in (the constants and the saved config's constexprs) and its launch metadata (``meta``, else
    the fields the saved params carry)."""
    from npu_inductor_compat.common.device.kernel_metadata import FIELDS
    from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreted_globals

    triton_meta = params["triton_meta"]
    constants = triton_meta.get("constants", {})
    arguments = [(arg, triton_meta["signature"][arg]) for arg in params["call_args"] if arg not in constants]
    function = autotuner.fn
    interpreted_globals(getattr(function, "fn", None))
    compiled_in = {**{key: value for key, value in constants.items() if value is not None}, **params["config"]}
    if meta is None:
        meta = {name: params[name] for name in FIELDS if params.get(name) is not None}
    return DeviceKernel(function, arguments, compiled_in, dict(meta))


def simulated_npu_extension() -> Any:
    """The simulated NPU's C++ extension (its memory blocks); the device must be set up."""
    from npu_inductor_compat.tools.simulated.npu import device_state

    state = device_state.instance()
    if state is None:
        raise RuntimeError("the simulated NPU is not set up (tools/simulated/npu/device.py setup())")
    return state.extension


class EmulatedDevice:
    """Runs the launches of ``acl`` (the loaded emulated libascendcl) while executing; else the emulated ACL dirties
    the memory each launch was given. ``kernels`` holds what it can run, by name; ``ran`` what it ran."""

    def __init__(self, acl: Any) -> None:
        from npu_inductor_compat.common.device.npu_cpp_wrapper import ffts_decision

        acl.emulated_acl_region_of.argtypes = [ctypes.c_void_p, *[ctypes.POINTER(ctypes.c_uint64)] * 2]
        acl.emulated_acl_set_kernel_runner.argtypes = [RUNNER]
        self.acl = acl
        extension = simulated_npu_extension()

        def extent(address: int) -> tuple[int, int, bool] | None:
            block = extension.block_of(address)  # a simulated-npu tensor's storage
            if block is not None:
                return block[0], block[1], True
            begin, size = ctypes.c_uint64(), ctypes.c_uint64()  # workspace and locks, from the emulated aclrtMalloc
            live = acl.emulated_acl_region_of(address, ctypes.byref(begin), ctypes.byref(size))
            return None if live == 0 else (begin.value, size.value, live > 0)

        self.device = Device({}, extent, ffts=ffts_decision()[0])
        self.ran: list[Ran] = []
        self._runner = RUNNER(self._run)  # kept alive as long as the device
        self.executing = False

    @property
    def kernels(self) -> dict[str, DeviceKernel]:
        return self.device.kernels

    def execute(self, on: bool) -> None:
        self.executing = on
        self.acl.emulated_acl_set_kernel_runner(self._runner if on else RUNNER())

    def _run(self, kernel: bytes, blocks: int, args: int, size: int, message: int, capacity: int) -> int:
        started = time.perf_counter()
        name = kernel.decode()
        error = self.device(name, blocks, ctypes.string_at(args, size))
        self.ran.append(Ran(name, blocks, error, time.perf_counter() - started))
        if error is None:
            return 0
        text = error.encode()[: capacity - 1]
        ctypes.memmove(message, text, len(text))
        return 1


class LoadedRuntime:
    """The emulated runtime's two libraries loaded (before any wrapper links them), every simulated device's core
    counts and SoC told to its ACL, launches not kept for a report, and the emulated device running them."""

    def __init__(self, libascendcl: str, libtorch_npu: str) -> None:
        import torch

        self.acl = ctypes.CDLL(libascendcl)
        self.torch_npu = ctypes.CDLL(libtorch_npu)
        self.acl.emulated_acl_report.restype = ctypes.c_char_p
        self.acl.emulated_acl_set_cores.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64]
        self.acl.emulated_acl_set_soc_name.argtypes = [ctypes.c_char_p]
        self.torch_npu.emulated_torch_npu_last_error.restype = ctypes.c_char_p
        for index in range(torch.npu.device_count()):
            found = torch.npu.get_device_properties(index)
            self.acl.emulated_acl_set_cores(index, int(found.cube_core_num), int(found.vector_core_num))
        self.acl.emulated_acl_set_soc_name(str(torch.npu.get_device_properties(0).name).encode())
        self.acl.emulated_acl_record_launches(0)
        self.emulated = EmulatedDevice(self.acl)
        self.emulated.execute(True)

    def synchronize(self) -> None:
        """Every task queue emptied and the device synchronised, as torch.npu.synchronize() does: the queued
        launches run now. RuntimeError with torch_npu's message when queued work failed."""
        if self.torch_npu.emulated_torch_npu_synchronize_device() != 0:
            raise RuntimeError(self.torch_npu.emulated_torch_npu_last_error().decode())

    def hazards(self) -> list[str]:
        """What the emulated ACL found wrong since the last reset (a launch the device refused among them)."""
        return list(json.loads(self.acl.emulated_acl_report())["hazards"])

    def reset(self) -> None:
        self.acl.emulated_acl_reset()
        self.emulated.ran.clear()
