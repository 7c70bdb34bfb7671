"""run_wrapper.py with "execute": the C++ wrapper's kernels run by the emulated device from their packed arguments (in
Triton's interpreter), each call's outputs compared with eager, and launch defects planted into the generated code."""

# The emulated ACL hands each launch, when its stream reaches it, to the tool's device_launch.Device: it reads the
# struct by the kernel's signature, checks the grid, workspace and lock buffer it was given and runs the kernel on the
# memory the struct points at. A phase with "plant" generates each kernel's launch as the package would, less one
# thing, by the kernel's place in compile order (PLANTS): the lock buffer's initialisation left out, its last argument
# left out of the struct, its first two pointers exchanged, its grid aligned on 8 bytes rather than 4.

from __future__ import annotations

import contextlib
import ctypes
import json
from collections.abc import Callable, Iterator
from typing import Any

RUNNER = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64
)
PLANTS = ("uninitialised", "missing", "swapped", "offset")


class Executed:
    """The device executing every launch of ``acl`` (the emulated libascendcl), and the kernels it holds: each one
    compiled takes its scenario's metadata (``assigned[name]`` indexes ``scenarios``)."""

    def __init__(self, acl: Any, scenarios: list[dict[str, Any]], assigned: dict[str, int], up_to: int) -> None:
        from torch._inductor.codecache import CudaKernelParamCache

        from npu_inductor_compat.common.device.npu_cpp_wrapper import ffts_decision
        from npu_inductor_compat.patching import Journal
        from npu_inductor_compat.tools.simulated.codegen import kernel_params
        from npu_inductor_compat.tools.simulated.execution.device_launch import Device
        from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreter_records
        from npu_inductor_compat.tools.simulated.npu import device_state

        self.acl, self.scenarios, self.assigned, self.up_to = acl, scenarios, assigned, up_to
        self.autotuners: dict[str, Any] = {}
        params_of, save = kernel_params.launch_params, CudaKernelParamCache.set.__func__

        def launch_params(autotuner: Any, config: Any = None) -> dict[str, Any]:
            params = params_of(autotuner, config)
            self.autotuners[params["mangled_name"]] = autotuner
            return params

        def set_(cls: Any, key: str, params: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            self.device.kernels[key] = self._on_device(key, params)
            return save(cls, key, params, *args, **kwargs)

        kernel_params.launch_params = launch_params
        CudaKernelParamCache.set = classmethod(set_)
        acl.emulated_acl_region_of.argtypes = [ctypes.c_void_p, *[ctypes.POINTER(ctypes.c_uint64)] * 2]
        acl.emulated_acl_set_kernel_runner.argtypes = [RUNNER]
        extension = device_state.instance().extension

        def extent(address: int) -> tuple[int, int, bool] | None:
            block = extension.block_of(address)  # a simulated-npu tensor's storage
            if block is not None:
                return block[0], block[1], True
            begin, size = ctypes.c_uint64(), ctypes.c_uint64()  # workspace, from the emulated aclrtMalloc
            live = acl.emulated_acl_region_of(address, ctypes.byref(begin), ctypes.byref(size))
            return None if live == 0 else (begin.value, size.value, live > 0)

        self.device = Device({}, extent, ffts=ffts_decision()[0])
        # as codegen --execute runs kernels: the interpreter's gaps on this Triton filled, every lane of every load
        # and store checked to lie inside the memory the launch was given
        Journal().apply([*interpreter_records(), BOUNDS_RECORD])
        self._runner = RUNNER(self._run)  # kept alive as long as the device
        self.executing = False

    def select(self, n: int) -> None:
        """Execute the launches of the next call when its input has at most ``up_to`` elements (Triton's interpreter
        takes about a millisecond an element across the graph's kernels); else the emulated ACL dirties their memory."""
        self.executing = n <= self.up_to
        self.acl.emulated_acl_set_kernel_runner(self._runner if self.executing else RUNNER())

    def _run(self, kernel: bytes, blocks: int, args: int, size: int, message: int, capacity: int) -> int:
        error = self.device(kernel.decode(), blocks, ctypes.string_at(args, size))
        if error is None:
            return 0
        text = error.encode()[: capacity - 1]
        ctypes.memmove(message, text, len(text))
        return 1

    def _on_device(self, name: str, params: dict[str, Any]) -> Any:
        """The device's copy of a compiled kernel: its interpreted function, the struct's arguments, the values
        compiled in (the saved config's constexprs and the constants) and its scenario's metadata."""
        from npu_inductor_compat.tools.simulated.execution.device_launch import DeviceKernel
        from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreted_globals

        meta = params["triton_meta"]
        constants = meta.get("constants", {})
        arguments = [(arg, meta["signature"][arg]) for arg in params["call_args"] if arg not in constants]
        function = self.autotuners[name].fn
        interpreted_globals(getattr(function, "fn", None))
        compiled_in = {**{key: value for key, value in constants.items() if value is not None}, **params["config"]}
        return DeviceKernel(function, arguments, compiled_in, dict(self.scenarios[self.assigned[name]]))

    @contextlib.contextmanager
    def planted(self, on: bool) -> Iterator[None]:
        """Inside, with ``on``, each kernel's launch is generated with the defect of its place in compile order."""
        from npu_inductor_compat.common.device import npu_cpp_wrapper

        if not on:
            yield
            return
        render = npu_cpp_wrapper.render_launch

        def planted(meta: Any, kernel_var: str, args: list[Any], **options: Any) -> str:
            defect = PLANTS[self.assigned[meta.kernel] % len(PLANTS)]
            with _defect(defect) as change:
                return render(meta, kernel_var, change(list(args)), **options)

        npu_cpp_wrapper.render_launch = planted
        try:
            yield
        finally:
            npu_cpp_wrapper.render_launch = render

    def compare(self, x: Any, outputs: Any, graph: Callable[[Any], Any], hazards: int) -> dict[str, Any]:
        """Whether each output equals eager's on the host copy of ``x``, and what the device found wrong since the
        ``hazards``-th hazard (nothing for a call it did not execute)."""
        import torch

        if not self.executing:
            return {}
        expected = graph(x.cpu())
        pairs = zip(outputs, expected, strict=True)
        matches = [bool(torch.allclose(out.cpu(), want, atol=1e-5)) for out, want in pairs]
        return {"matches": matches, "hazards": json.loads(self.acl.emulated_acl_report())["hazards"][hazards:]}


@contextlib.contextmanager
def _defect(defect: str) -> Iterator[Callable[[list[Any]], list[Any]]]:
    """The change to one launch's argument fields, with what the runtime generator must do differently meanwhile."""
    from npu_inductor_compat.common.device import npu_launch

    if defect == "missing":
        yield lambda args: args[:-1]
    elif defect == "swapped":

        def swap(args: list[Any]) -> list[Any]:
            first, second = [index for index, arg in enumerate(args) if arg.ctype.endswith("*")][:2]
            args[first], args[second] = args[second], args[first]
            return args

        yield swap
    elif defect == "offset":
        kept = npu_launch.ArgField.alignment
        npu_launch.ArgField.alignment = property(  # type: ignore[method-assign]
            lambda self: 8 if self.name.startswith("grid_") else kept.fget(self)
        )
        try:
            yield lambda args: args
        finally:
            npu_launch.ArgField.alignment = kept  # type: ignore[method-assign]
    else:
        scratch = npu_launch._scratch
        npu_launch._scratch = lambda meta: [
            line for line in scratch(meta) if "aclrtMemsetAsync" not in line and "copy_lock_image" not in line
        ]
        try:
            yield lambda args: args
        finally:
            npu_launch._scratch = scratch
