"""An NPU kernel's packed argument struct as the device reads it: the layout from the kernel's signature and launch
metadata, the fields decoded from the launch's bytes, and the lock buffer the kernel expects to start from."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# triton-ascend third_party/ascend/backend/driver.py, ty_to_cpp: the C type each Triton scalar type is passed as
# (i1 as int32_t, every float narrower than 64 bits as float); as (bytes, struct format).
SCALARS: dict[str, tuple[int, str]] = {
    "i1": (4, "i"),
    "i8": (1, "b"),
    "i16": (2, "h"),
    "i32": (4, "i"),
    "i64": (8, "q"),
    "u1": (4, "I"),
    "u8": (1, "B"),
    "u16": (2, "H"),
    "u32": (4, "I"),
    "u64": (8, "Q"),
    "fp16": (4, "f"),
    "bf16": (4, "f"),
    "fp32": (4, "f"),
    "f32": (4, "f"),
    "fp64": (8, "d"),
}
SLOTS_PER_LOCK_LINE = 8  # a 64-byte cache line of int64 slots


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    form: str  # struct format of the value, little-endian
    pointer: bool


@dataclass(frozen=True)
class Layout:
    fields: tuple[Field, ...]
    size: int  # sizeof the struct: its end rounded up to its widest alignment (8)

    def decode(self, raw: bytes) -> dict[str, Any]:
        """Each field's value; the bytes must be exactly the struct's size."""
        if len(raw) != self.size:
            raise ValueError(f"the argument struct is {len(raw)} bytes; the kernel's signature reads {self.size}")
        return {field.name: struct.unpack_from("<" + field.form, raw, field.offset)[0] for field in self.fields}


def native_launcher(meta: Mapping[str, Any]) -> bool:
    """Compiled for triton-ascend's native launcher (launcher.py at commit 3d75379a requires the compiler to report
    program_grid_mapping_applied; the package's saved params say native_launcher)."""
    return bool(meta.get("native_launcher")) or "program_grid_mapping_applied" in meta


def coalescing(meta: Mapping[str, Any]) -> tuple[int, int]:
    """(factor, axis) the compiler coalesced the kernel's programs by: (1, -1) for none."""
    factor = int(meta.get("coalesce_factor") or 1)
    return (factor, int(meta.get("coalesce_axis", -1))) if factor > 1 else (1, -1)


def pure_simt(meta: Mapping[str, Any]) -> bool:
    """A kernel built with no lock or workspace pointer: 3.2.0's force_simt_only, or a newer release's is_pure_simt."""
    return bool(meta.get("force_simt_only") or meta.get("is_pure_simt"))


def layout(arguments: list[tuple[str, str]], meta: Mapping[str, Any], *, ffts: bool) -> Layout:
    """The struct triton-ascend's launcher builds and the kernel reads (driver.py, make_launcher: ``struct
    __attribute__((packed))``): [ffts_addr,] [syncBlockLock, workspace_addr,] the arguments that are neither constant
    nor constexpr in signature order, gridX, gridY, gridZ as int32 (the launched grid, after coalescing); for the
    native launcher then two scratch slots when pure SIMT, and a debug slot. Pointers and 64-bit scalars are aligned
    on 8 bytes, every other scalar on 4. ``arguments``: (name, Triton type) of each argument the struct carries."""
    fields: list[Field] = []
    offset = 0

    def take(name: str, size: int, form: str, align: int, pointer: bool = False) -> None:
        nonlocal offset
        offset = (offset + align - 1) // align * align
        fields.append(Field(name, offset, form, pointer))
        offset += size

    if ffts:
        take("ffts_addr", 8, "Q", 8)
    if not pure_simt(meta):
        take("sync_block_lock", 8, "Q", 8)
        take("workspace_addr", 8, "Q", 8)
    for name, kind in arguments:
        if kind.startswith("*"):
            take(name, 8, "Q", 8, pointer=True)
            continue
        if kind not in SCALARS:
            raise ValueError(f"argument {name} has Triton type {kind!r}, which triton-ascend's launcher does not pass")
        size, form = SCALARS[kind]
        take(name, size, form, 8 if kind.endswith("64") else 4)
    for axis in range(3):
        take(f"grid_{axis}", 4, "i", 4)
    if native_launcher(meta):  # launcher_src/launcher_args.h, ArgLayout: then [2 scratch slots,] a debug slot
        for name in [*(["global_scratch", "profile_scratch"] if pure_simt(meta) else []), "debug_tunnel"]:
            take(name, 8, "Q", 8)
    return Layout(tuple(fields), (offset + 7) // 8 * 8)


def lock_init(meta: Mapping[str, Any]) -> int:
    """lock_init_val (a newer triton-ascend's name) or lock_init_value (3.2.0's), 0 when neither is recorded."""
    return int(meta.get("lock_init_val", meta.get("lock_init_value", 0)))


def workspace_bytes(meta: Mapping[str, Any], grid_blocks: int) -> int:
    """The workspace a launch must point at: workspace_size per block of the logical grid (driver.py: totalWorkSpaceSize
    = workspace_size * gridX * gridY * gridZ), none for a pure-SIMT kernel."""
    size = int(meta.get("workspace_size", 0))
    return 0 if pure_simt(meta) or size <= 0 else size * grid_blocks


def lock_image(meta: Mapping[str, Any], block_dim: int) -> list[int]:
    """The int64 slots a launch's sync-block lock buffer holds when the kernel starts (none for a pure-SIMT kernel).

    triton-ascend's launcher: with ``lock_num`` (3.2.0), lock_num slots at the init value; with
    ``sync_block_lock_layout`` (newer: the low 32 bits count ordered locks, the high 32 unordered ones), each ordered
    lock is a cache line of slots at the init value, or at 0 beside unordered locks, and each unordered lock is
    1 + 2 x participants cache lines whose first slot holds the participant count (the launched blocks, x2 in mix mode
    with auto_tile_and_bind_subblock), the rest 0."""
    if pure_simt(meta):
        return []
    layout_bits = int(meta.get("sync_block_lock_layout", 0))
    init = lock_init(meta)
    if not layout_bits:
        return [init] * max(int(meta.get("lock_num", 0)), 0)
    ordered, unordered = layout_bits & 0xFFFFFFFF, layout_bits >> 32
    mix = meta.get("mix_mode") == "mix" and bool(meta.get("auto_tile_and_bind_subblock"))
    participants = block_dim * (2 if unordered and mix else 1)
    one = [participants] + [0] * ((1 + 2 * participants) * SLOTS_PER_LOCK_LINE - 1)
    return [0 if unordered else init] * (ordered * SLOTS_PER_LOCK_LINE) + one * unordered
