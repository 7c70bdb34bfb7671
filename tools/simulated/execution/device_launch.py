"""The emulated NPU's side of a C++ launch: read the packed argument struct as the kernel would, check what the kernel
relies on at its start, and run the kernel in Triton's interpreter on the memory the launch points at."""

from __future__ import annotations

import ctypes
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.tools.simulated.execution import packed_args

# (start, bytes, live) of the block of device memory an address lies in, or None
Extent = Callable[[int], "tuple[int, int, bool] | None"]
DIRT = 0xA5  # what a kernel leaves in its workspace and lock buffer: nothing may rely on them afterwards

POINTEE = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
}


@dataclass
class DeviceKernel:
    """A compiled kernel as the device holds it: its Triton function (interpreted), the (name, Triton type) of each
    argument the struct carries, the values compiled in (constants and the config's constexprs) and the compiler's
    launch metadata."""

    function: Any
    arguments: list[tuple[str, str]]
    compiled_in: dict[str, Any]
    meta: Mapping[str, Any]


def _programs(grid: tuple[int, ...], meta: Mapping[str, Any]) -> tuple[int, ...]:
    """The programs of the kernel's Triton source: a coalesced kernel's launched program does ``factor`` of them along
    its axis (past the end of a rounded-up grid, the source's own masks or guard leave them idle)."""
    factor, axis = packed_args.coalescing(meta)
    return grid if factor == 1 else tuple(dim * factor if index == axis else dim for index, dim in enumerate(grid))


class LaunchFault(Exception):
    """What a kernel would do wrong, or find wrong, when it starts on the device."""


@dataclass
class Device:
    """Executes launches: ``device(kernel, blocks, raw)`` returns None, or what went wrong (naming the kernel)."""

    kernels: dict[str, DeviceKernel]
    extent: Extent
    ffts: bool
    ran: list[str] = field(default_factory=list)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, kernel: str, blocks: int, raw: bytes) -> str | None:
        with self._guard:  # one kernel at a time: Triton's interpreter keeps its grid and program in globals
            try:
                self._run(kernel, blocks, raw)
            except LaunchFault as err:
                return f"{kernel}: {err}"
            except Exception as err:  # the kernel raised in Triton's interpreter
                text = "".join(traceback.format_exception_only(type(err), err)).strip()
                return f"{kernel}: raised in Triton's interpreter: {text[-1500:]}"
            self.ran.append(kernel)
            return None

    def _run(self, name: str, blocks: int, raw: bytes) -> None:
        kernel = self.kernels.get(name)
        if kernel is None:
            raise LaunchFault("no kernel of that name was loaded")
        try:
            values = packed_args.layout(kernel.arguments, kernel.meta, ffts=self.ffts).decode(raw)
        except ValueError as err:
            raise LaunchFault(str(err)) from None
        grid = tuple(int(values[f"grid_{axis}"]) for axis in range(3))
        grid_blocks = grid[0] * grid[1] * grid[2]
        if not 0 < blocks <= grid_blocks:
            raise LaunchFault(f"launched on {blocks} blocks for the grid {grid} ({grid_blocks} blocks)")
        if self.ffts and values["ffts_addr"] == 0:
            raise LaunchFault("its FFTS address is null")
        scratch: list[tuple[int, int]] = []
        try:  # whatever the kernel found, it ran: its workspace and locks are left dirty
            self._scratch(kernel, values, blocks, grid_blocks, scratch)
            tensors = {
                name: self._alias(name, kind[1:], int(values[name]))
                for name, kind in kernel.arguments
                if kind[0] == "*"
            }
            scalars = {name: values[name] for name, kind in kernel.arguments if kind[0] != "*"}
            kernel.function[_programs(grid, kernel.meta)](**tensors, **scalars, **kernel.compiled_in)
        finally:
            for address, size in scratch:
                ctypes.memset(address, DIRT, size)

    def _scratch(
        self, kernel: DeviceKernel, values: dict[str, Any], blocks: int, grid_blocks: int, spans: list[tuple[int, int]]
    ) -> None:
        """The workspace and lock buffer the launch must point at, checked (each added to ``spans`` once it is); the
        locks must hold their image."""
        if packed_args.pure_simt(kernel.meta):
            return
        workspace = packed_args.workspace_bytes(kernel.meta, grid_blocks)
        if workspace:
            spans.append(self._span("workspace_addr", int(values["workspace_addr"]), workspace))
        image = packed_args.lock_image(kernel.meta, blocks)
        if image:
            address = int(values["sync_block_lock"])
            spans.append(self._span("sync_block_lock", address, 8 * len(image)))
            slots = list((ctypes.c_int64 * len(image)).from_address(address))
            pairs = enumerate(zip(slots, image, strict=True))
            wrong = next((index for index, (have, want) in pairs if have != want), None)
            if wrong is not None:
                raise LaunchFault(
                    f"its sync-block lock buffer is not initialised: slot {wrong} holds {slots[wrong]}, the kernel "
                    f"starts from {image[wrong]} ({len(image)} slots)"
                )

    def _span(self, what: str, address: int, size: int) -> tuple[int, int]:
        found = self.extent(address) if address else None
        if found is None or not found[2]:
            state = "null" if not address else "freed memory" if found else "no device memory"
            raise LaunchFault(f"{what} points at {address:#x}: {state}, where {size} bytes are needed")
        begin, length, _ = found
        if address + size > begin + length:
            raise LaunchFault(f"{what} has {begin + length - address} bytes from {address:#x}; it needs {size}")
        return address, size

    def _alias(self, name: str, pointee: str, address: int) -> Any:
        """A CPU tensor over the device memory from ``address`` to the end of its block (what the kernel may
        reach; Triton's interpreter reads and writes it in place)."""
        import torch

        found = self.extent(address) if address else None
        if found is None or not found[2]:
            state = "null" if not address else "freed memory" if found else "no device memory"
            raise LaunchFault(f"argument {name} points at {address:#x}: {state}")
        dtype = getattr(torch, POINTEE.get(pointee, ""), None)
        if dtype is None:
            raise LaunchFault(f"argument {name} points at Triton type {pointee!r}, not modelled here")
        begin, length, _ = found
        itemsize = torch.empty((), dtype=dtype).element_size()
        count = (begin + length - address) // itemsize
        if count == 0:
            raise LaunchFault(f"argument {name} points at the last {begin + length - address} bytes of its block")
        buffer = (ctypes.c_char * (count * itemsize)).from_address(address)
        return torch.frombuffer(buffer, dtype=torch.uint8).view(dtype)
