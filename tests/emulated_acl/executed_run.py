"""run_wrapper.py with "execute": the C++ wrapper's kernels run by the emulated device from their packed arguments (in
Triton's interpreter), each call's outputs compared with eager, and launch defects planted into the generated code."""

# The emulated ACL hands each launch, when its stream reaches it, to the tool's device_launch.Device: it reads the
# struct by the kernel's signature, checks the grid, workspace and lock buffer it was given and runs the kernel on the
# memory the struct points at. A phase with "plant" generates each kernel's launch as the package would, less one
# thing, by the kernel's place in compile order (PLANTS): the lock buffer's initialisation left out, its last argument
# left out of the struct, its first two pointers exchanged, its grid aligned on 8 bytes rather than 4; and a kernel
# the compiler coalesced is launched as if its metadata had no coalescing (the factor ignored).

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

PLANTS = ("uninitialised", "missing", "swapped", "offset")


class _Kernels(dict[str, Any]):
    """The device's kernels, each made on its first launch from what its autotuner saved (the tool's SAVED)."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self._make = make

    def get(self, name: str, default: Any = None) -> Any:
        if name not in self:
            found = self._make(name)
            if found is None:
                return default
            self[name] = found
        return super().get(name, default)


class Executed:
    """The device executing every launch of ``acl`` (the emulated libascendcl, the tool's EmulatedDevice), each
    kernel with the metadata ``metadata_for`` gives it; ``assigned`` is each kernel's place in compile order."""

    def __init__(self, acl: Any, metadata_for: Callable[[str], Any], assigned: dict[str, int], up_to: int) -> None:
        from npu_inductor_compat.patching import Journal
        from npu_inductor_compat.tools.simulated.execution import cpp_device
        from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreter_records

        self.assigned, self.up_to = assigned, up_to

        def make(name: str) -> Any:
            params, autotuner = cpp_device.SAVED.params.get(name), cpp_device.SAVED.autotuners.get(name)
            return None if params is None else cpp_device.device_kernel(params, autotuner, metadata_for(name))

        self.emulated = cpp_device.EmulatedDevice(acl)
        self.emulated.device.kernels = _Kernels(make)
        # as codegen --execute runs kernels: the interpreter's gaps on this Triton filled, every lane of every load
        # and store checked to lie inside the memory the launch was given
        Journal().apply([*interpreter_records(), BOUNDS_RECORD])

    def select(self, n: int) -> None:
        """Execute the launches of the next call when its input has at most ``up_to`` elements (Triton's interpreter
        takes about a millisecond an element across the graph's kernels); else the emulated ACL dirties their memory."""
        self.emulated.execute(n <= self.up_to)

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
            if meta.coalesce_factor > 1:  # and a coalesced kernel launched as if it were not (factor ignored)
                meta = dataclasses.replace(meta, coalesce_factor=1, coalesce_axis=-1, coalesce_grid_ceil_div=False)
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

        if not self.emulated.executing:
            return {}
        expected = graph(x.cpu())
        pairs = zip(outputs, expected, strict=True)
        matches = [bool(torch.allclose(out.cpu(), want, atol=1e-5)) for out, want in pairs]
        report = json.loads(self.emulated.acl.emulated_acl_report())
        return {"matches": matches, "hazards": report["hazards"][hazards:]}


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
