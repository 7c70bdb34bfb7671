"""The emulated device's reading of a packed launch: the struct layout by triton-ascend's launcher rules, the lock
image a kernel starts from, and each fault the device refuses a launch for (the kernel itself a recording stand-in;
the real kernels run from real wrappers in tests/common/device/test_npu_wrapper_run.py)."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import pytest

from npu_inductor_compat.tools.simulated.execution import packed_args
from npu_inductor_compat.tools.simulated.execution.device_launch import Device, DeviceKernel

LOCKS = {"workspace_size": 16, "lock_num": 2, "lock_init_value": 5}
# triton-ascend driver.py make_launcher: pointers and *64 types on 8 bytes, every other scalar on 4 (i8 too), i1 and
# the narrow floats passed as 4-byte int32_t / float
MIXED = [("in_ptr0", "*fp32"), ("a", "i8"), ("b", "i64"), ("c", "fp16"), ("d", "fp64"), ("e", "i1")]


def test_the_layout_follows_triton_ascends_alignment_rules() -> None:
    layout = packed_args.layout(MIXED, LOCKS, ffts=True)
    offsets = {field.name: field.offset for field in layout.fields}
    assert offsets == {
        "ffts_addr": 0,
        "sync_block_lock": 8,
        "workspace_addr": 16,
        "in_ptr0": 24,
        "a": 32,
        "b": 40,
        "c": 48,
        "d": 56,
        "e": 64,
        "grid_0": 68,
        "grid_1": 72,
        "grid_2": 76,
    }
    assert layout.size == 80
    simt = packed_args.layout(MIXED[:1], {"is_pure_simt": True}, ffts=False)
    assert [field.name for field in simt.fields] == ["in_ptr0", "grid_0", "grid_1", "grid_2"] and simt.size == 24


def test_a_struct_of_another_size_or_an_unknown_type_is_refused_by_name() -> None:
    layout = packed_args.layout(MIXED, LOCKS, ffts=True)
    with pytest.raises(ValueError, match="the argument struct is 72 bytes; the kernel's signature reads 80"):
        layout.decode(bytes(72))
    with pytest.raises(ValueError, match="argument x has Triton type 'fp8e5'"):
        packed_args.layout([("x", "fp8e5")], LOCKS, ffts=True)


def test_the_lock_image_in_both_spellings() -> None:
    assert packed_args.lock_image(LOCKS, 7) == [5, 5]
    mix = {"sync_block_lock_layout": (1 << 32) | 2, "lock_init_val": 7, "mix_mode": "mix"}
    image = packed_args.lock_image({**mix, "auto_tile_and_bind_subblock": True}, 3)
    participants = 6  # 3 blocks, x2 in mix mode with sub-block binding
    assert image == [0] * 16 + [participants] + [0] * ((1 + 2 * participants) * 8 - 1)
    assert packed_args.lock_image({"sync_block_lock_layout": 2, "lock_init_val": 7}, 3) == [7] * 16
    assert packed_args.lock_image({**LOCKS, "force_simt_only": True}, 3) == []


class _Memory:
    """Device memory for the device under test: one block, and what was launched on it."""

    def __init__(self) -> None:
        self.block = (ctypes.c_char * 4096)()
        self.base = ctypes.addressof(self.block)
        self.freed = False
        self.calls: list[tuple[Any, dict[str, Any]]] = []

    def extent(self, address: int) -> tuple[int, int, bool] | None:
        inside = self.base <= address < self.base + 4096
        return (self.base, 4096, not self.freed) if inside else None

    def kernel(self) -> DeviceKernel:
        memory = self

        class Launcher:
            def __getitem__(self, grid: Any) -> Any:
                return lambda **kwargs: memory.calls.append((grid, kwargs))

        return DeviceKernel(Launcher(), [("in_ptr0", "*fp32"), ("xnumel", "i32")], {"XBLOCK": 8}, LOCKS)

    def launch(self, locks: list[int] | None = None, **change: int) -> str | None:
        ctypes.memmove(self.base + 1024, struct.pack("<2q", *(locks or [5, 5])), 16)
        fields = {"ffts": 1, "locks": self.base + 1024, "workspace": self.base + 2048, "ptr": self.base, "n": 3}
        fields.update(change)
        addresses = [fields[name] for name in ("ffts", "locks", "workspace", "ptr")]
        raw = struct.pack("<4Qi3i", *addresses, fields["n"], 2, 1, 1)  # 48 bytes: no tail padding
        device = Device({"k": self.kernel()}, self.extent, ffts=True)
        return device("k", change.get("blocks", 2), raw)


def test_a_well_formed_launch_runs_with_its_fields_and_leaves_its_scratch_dirty() -> None:
    memory = _Memory()
    assert memory.launch() is None
    ((grid, kwargs),) = memory.calls
    assert grid == (2, 1, 1) and kwargs["xnumel"] == 3 and kwargs["XBLOCK"] == 8
    assert kwargs["in_ptr0"].data_ptr() == memory.base and kwargs["in_ptr0"].numel() == 1024
    assert memory.block[1024] == bytes([0xA5]) and memory.block[2048] == bytes([0xA5])


@pytest.mark.parametrize(
    ("change", "locks", "fault"),
    [
        ({}, [5, 0], "lock buffer is not initialised: slot 1 holds 0, the kernel starts from 5"),
        ({"ffts": 0}, None, "its FFTS address is null"),
        ({"workspace": 0}, None, "workspace_addr points at 0x0: null, where 32 bytes are needed"),
        ({"workspace": 4096}, None, "workspace_addr points at 0x1000: no device memory"),
        ({"blocks": 3}, None, "launched on 3 blocks for the grid (2, 1, 1)"),
        ({"ptr": 8}, None, "argument in_ptr0 points at 0x8: no device memory"),
    ],
)
def test_each_fault_is_named_and_the_kernel_does_not_run(change: dict[str, int], locks: Any, fault: str) -> None:
    memory = _Memory()
    found = memory.launch(locks, **change) or ""
    assert found.startswith("k: ") and fault in found, found
    assert memory.calls == []


def test_a_launch_into_freed_memory_is_refused() -> None:
    memory = _Memory()
    memory.freed = True
    found = memory.launch() or ""
    assert "workspace_addr points at" in found and "freed memory" in found, found
    assert memory.calls == []


def test_the_native_launchers_trailing_slots_follow_the_grid() -> None:
    """triton-ascend launcher_src/launcher_args.h (ArgLayout, commit 3d75379a): [2 scratch slots if pure SIMT,] a
    debug slot, each 8 bytes on 8."""
    native = packed_args.layout(MIXED[:1], {"program_grid_mapping_applied": False}, ffts=True)
    assert [(field.name, field.offset) for field in native.fields[-4:]] == [
        ("grid_0", 32),
        ("grid_1", 36),
        ("grid_2", 40),
        ("debug_tunnel", 48),
    ]
    assert native.size == 56
    simt = packed_args.layout(MIXED[:1], {"native_launcher": True, "is_pure_simt": True}, ffts=False)
    names = [field.name for field in simt.fields]
    assert names[-3:] == ["global_scratch", "profile_scratch", "debug_tunnel"] and simt.size == 48


def test_a_coalesced_kernels_source_runs_on_factor_times_the_launched_programs() -> None:
    memory = _Memory()
    kernel = memory.kernel()
    kernel.meta = {**LOCKS, "coalesce_factor": 4, "coalesce_axis": 0, "coalesce_grid_ceil_div": True}
    raw = struct.pack("<4Qi3i", 1, memory.base + 1024, memory.base + 2048, memory.base, 3, 2, 1, 1)
    ctypes.memmove(memory.base + 1024, struct.pack("<2q", 5, 5), 16)
    assert Device({"k": kernel}, memory.extent, ffts=True)("k", 2, raw) is None
    ((grid, _),) = memory.calls
    assert grid == (8, 1, 1)
