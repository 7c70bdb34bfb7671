"""Launch metadata triton-ascend records per compiled kernel, read and validated before it can reach generated C++."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CACHE_LINE_BYTES = 64  # one lock: 8 x int64
LEGACY_SIMT_UNIFIED_BUFFER = 216 * 1024  # what triton-ascend 3.2.0 launches SIMT kernels with, recording no size
INT64_BYTES = 8

# Upper bounds keep every derived size inside int64 arithmetic in the generated C++ (which also checks overflow).
LIMITS = {
    "workspace_size": 1 << 40,  # bytes per block
    "lock_num": 1 << 31,
    "sync_block_lock_layout": 1 << 64,
    "lock_init_val": 1 << 63,
    "shared_mem_dynamic_size": 1 << 32,  # ACL's aclrtLaunchKernelAttrValue.dynUBufSize is a uint32_t
}
COALESCE_LIMIT = 1 << 16
# triton-ascend's launcher (launcher_src/launcher_args.h, prepareGrid; launcher.py, make_launch_spec) at commit
# 3d75379a: a compiler-coalesced kernel is launched on its grid divided by coalesce_factor along coalesce_axis (-1:
# none), rounded up with coalesce_grid_ceil_div. A kernel whose metadata carries program_grid_mapping_applied was
# compiled for its native launcher: its struct ends in a debug slot, after two scratch slots when pure SIMT.
NATIVE_LAUNCHER_FIELD = "program_grid_mapping_applied"
MODE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch: "$" would let a trailing newline through


class KernelMetadataError(ValueError):
    """A metadata field that must not be printed into C++; the message names the kernel and the field."""


def _field(metadata: Any, name: str) -> Any:
    if isinstance(metadata, Mapping):
        return metadata.get(name)
    return getattr(metadata, name, None)


def _integer(kernel: str, name: str, value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise KernelMetadataError(
            f"kernel {kernel!r}: metadata field {name!r} must be a non-negative integer, got {value!r} "
            f"({type(value).__name__})"
        )
    # A plain int before anything else: a subclass could answer comparisons or formatting with other text.
    value = int.__int__(value)
    if not 0 <= value < LIMITS[name]:
        raise KernelMetadataError(
            f"kernel {kernel!r}: metadata field {name!r} = {value} is out of range [0, {LIMITS[name]})"
        )
    return int(value)


def _flag(kernel: str, name: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise KernelMetadataError(
            f"kernel {kernel!r}: metadata field {name!r} must be a bool, got {value!r} ({type(value).__name__})"
        )
    return value is True


def _mode(kernel: str, name: str, value: Any, examples: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = str.__str__(value)  # a plain str: a subclass's __format__ would decide the C++ text otherwise
    if not isinstance(value, str) or (value and not MODE.fullmatch(value)):
        raise KernelMetadataError(
            f"kernel {kernel!r}: metadata field {name!r} must be an identifier such as {examples}, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class KernelLaunchMetadata:
    """A kernel's launch metadata, each field a plain ``int``/``str``/``bool`` (absent means 0 / "" / False).

    ``workspace_size`` (bytes per block of the grid), ``lock_num`` (int64 lock slots, triton-ascend < 3.6),
    ``sync_block_lock_layout`` (3.6: packed lock counts, low 32 bits ordered locks, high 32 bits unordered locks),
    ``lock_init_val`` (falling back to ``lock_init_value``, the name triton-ascend 3.2.0's own driver reads),
    ``mix_mode`` (e.g. "aiv", "aic", "mix"), ``auto_tile_and_bind_subblock``, the pure-SIMT flag under both names the
    released lines use (``force_simt_only``; ``is_pure_simt`` in newer triton-ascend), ``parallel_mode`` ("simd",
    "simt", ...), ``compile_on_910_95`` (compiled for the Ascend 910_95 family), ``shared_mem_dynamic_size`` (the
    dynamic unified-buffer bytes a SIMT kernel compiled for 910_95 is launched with; 216 KiB where the metadata has
    none, as triton-ascend 3.2.0 launches them), ``has_auto_blockify_blacklist_op`` (torch_npu: never cap its
    blocks), the compiler's coalescing (``coalesce_factor``, 1 for none; ``coalesce_axis``, -1 for none;
    ``coalesce_grid_ceil_div``) and ``native_launcher`` (compiled for triton-ascend's native launcher, see
    NATIVE_LAUNCHER_FIELD).
    """

    kernel: str
    workspace_size: int = 0
    lock_num: int = 0
    sync_block_lock_layout: int = 0
    lock_init_val: int = 0
    mix_mode: str = ""
    auto_tile_and_bind_subblock: bool = False
    force_simt_only: bool = False
    is_pure_simt: bool = False
    parallel_mode: str = ""
    compile_on_910_95: bool = False
    shared_mem_dynamic_size: int = 0
    has_auto_blockify_blacklist_op: bool = False
    coalesce_factor: int = 1
    coalesce_axis: int = -1
    coalesce_grid_ceil_div: bool = False
    native_launcher: bool = False

    @property
    def pure_simt(self) -> bool:
        """A pure-SIMT kernel takes neither the lock nor the workspace pointer (both names of the flag)."""
        return self.force_simt_only or self.is_pure_simt

    @property
    def simt(self) -> bool:
        """Pure SIMT, or a parallel mode with SIMT in it (triton-ascend driver.py and torch_npu cpp_wrapper_npu.py:
        ``"simt" in parallel_mode or force_simt_only``)."""
        return self.pure_simt or "simt" in self.parallel_mode

    @property
    def dynamic_unified_buffer(self) -> bool:
        """Launched with a dynamic unified buffer: a SIMT kernel compiled for the 910_95 family. triton-ascend's
        launcher asks both (3.2.0 and main, driver.py: ``if compile_on_910_95 and enable_simt``), as torch_npu's
        wrapper asks SIMT and an Ascend950 SoC (cpp_wrapper_npu.py, ``is_ascend950``); other SoCs have no SIMT
        launch attribute, so a SIMT kernel compiled for them launches like any other."""
        return self.simt and self.compile_on_910_95

    @property
    def vector_cores(self) -> bool:
        """Whether the kernel runs on vector cores (mix_mode "aiv") rather than AI cores."""
        return self.mix_mode == "aiv"

    @property
    def ordered_locks(self) -> int:
        return self.sync_block_lock_layout & 0xFFFFFFFF

    @property
    def unordered_locks(self) -> int:
        return self.sync_block_lock_layout >> 32

    @property
    def uses_workspace(self) -> bool:
        return self.workspace_size > 0 and not self.pure_simt

    @property
    def uses_locks(self) -> bool:
        return (self.lock_num > 0 or self.sync_block_lock_layout > 0) and not self.pure_simt

    def participants(self, blocks: int) -> int:
        """Blocks taking part in an unordered lock: the launched blocks, twice in mix mode with sub-block binding."""
        return blocks * 2 if self.mix_mode == "mix" and self.auto_tile_and_bind_subblock else blocks

    def lock_bytes(self, blocks: int) -> int:
        """Size of the lock buffer for a launch of ``blocks`` blocks (the packed layout wins over lock_num)."""
        if not self.uses_locks:
            return 0
        if self.sync_block_lock_layout:
            unordered_lines = self.unordered_locks * (1 + 2 * self.participants(blocks))
            return (self.ordered_locks + unordered_lines) * CACHE_LINE_BYTES
        return self.lock_num * INT64_BYTES

    def workspace_bytes(self, grid: tuple[int, int, int]) -> int:
        return self.workspace_size * grid[0] * grid[1] * grid[2] if self.uses_workspace else 0

    def as_params(self) -> dict[str, Any]:
        """The fields as saved kernel params carry them to the C++ wrapper (``lock_init_val`` under its compiler
        name whichever name the metadata used)."""
        return {name: getattr(self, name) for name in FIELDS}


FIELDS = (
    "workspace_size",
    "lock_num",
    "sync_block_lock_layout",
    "lock_init_val",
    "mix_mode",
    "auto_tile_and_bind_subblock",
    "force_simt_only",
    "is_pure_simt",
    "parallel_mode",
    "compile_on_910_95",
    "shared_mem_dynamic_size",
    "has_auto_blockify_blacklist_op",
    "coalesce_factor",
    "coalesce_axis",
    "coalesce_grid_ceil_div",
    "native_launcher",
)


def read_launch_metadata(kernel: str, metadata: Any) -> KernelLaunchMetadata:
    """Validated launch metadata of ``kernel`` from triton-ascend's metadata object (``bin.metadata``) or dict.

    These values are printed into C++: each is converted to a plain ``int``/``str``/``bool`` first, and anything that
    is not a non-negative integer in range (or a bool where a flag is meant, an identifier where a mode is meant) is an
    error naming the kernel and the field.
    """
    init = _field(metadata, "lock_init_val")
    if init is None:
        init = _field(metadata, "lock_init_value")  # triton-ascend 3.2.0's driver reads this name
    found = KernelLaunchMetadata(
        kernel=kernel,
        workspace_size=_integer(kernel, "workspace_size", _field(metadata, "workspace_size")),
        lock_num=_integer(kernel, "lock_num", _field(metadata, "lock_num")),
        sync_block_lock_layout=_integer(kernel, "sync_block_lock_layout", _field(metadata, "sync_block_lock_layout")),
        lock_init_val=_integer(kernel, "lock_init_val", init),
        mix_mode=_mode(kernel, "mix_mode", _field(metadata, "mix_mode"), "'aiv' or 'mix'"),
        auto_tile_and_bind_subblock=_flag(
            kernel, "auto_tile_and_bind_subblock", _field(metadata, "auto_tile_and_bind_subblock")
        ),
        force_simt_only=_flag(kernel, "force_simt_only", _field(metadata, "force_simt_only")),
        is_pure_simt=_flag(kernel, "is_pure_simt", _field(metadata, "is_pure_simt")),
        parallel_mode=_mode(kernel, "parallel_mode", _field(metadata, "parallel_mode"), "'simd' or 'simt'"),
        compile_on_910_95=_flag(kernel, "compile_on_910_95", _field(metadata, "compile_on_910_95")),
        shared_mem_dynamic_size=_integer(
            kernel, "shared_mem_dynamic_size", _field(metadata, "shared_mem_dynamic_size")
        ),
        has_auto_blockify_blacklist_op=_flag(
            kernel, "has_auto_blockify_blacklist_op", _field(metadata, "has_auto_blockify_blacklist_op")
        ),
    )
    found = _coalescing(found, metadata)
    if found.dynamic_unified_buffer and _field(metadata, "shared_mem_dynamic_size") is None:
        # triton-ascend 3.2.0 records no size and launches every SIMT kernel with 216 KiB (its driver.py:
        # cfgInfo.localMemorySize = 216 * 1024); later releases always record it (NPUOptions.shared_mem_dynamic_size)
        found = dataclasses.replace(found, shared_mem_dynamic_size=LEGACY_SIMT_UNIFIED_BUFFER)
    return found


def _whole(kernel: str, name: str, value: Any, absent: int, allowed: range) -> int:
    if value is None:
        return absent
    if isinstance(value, bool) or not isinstance(value, int) or int.__int__(value) not in allowed:
        raise KernelMetadataError(
            f"kernel {kernel!r}: metadata field {name!r} must be an integer in [{allowed.start}, {allowed.stop}), "
            f"got {value!r}"
        )
    return int.__int__(value)


def _coalescing(found: KernelLaunchMetadata, metadata: Any) -> KernelLaunchMetadata:
    """The coalescing and launcher fields, checked as triton-ascend's launcher checks them (launcher.py,
    _program_grid_flags; launcher_args.h, validateSpec); a program-grid transform is refused: this wrapper does not
    write the original-grid slot or rewrite the grid as that launcher does for one."""
    kernel = found.kernel
    factor = _whole(kernel, "coalesce_factor", _field(metadata, "coalesce_factor"), 1, range(COALESCE_LIMIT))
    factor = max(factor, 1)  # triton-ascend: "int(getattr(metadata, 'coalesce_factor', 1) or 1)"
    axis = _whole(kernel, "coalesce_axis", _field(metadata, "coalesce_axis"), -1, range(-1, 3))
    ceil_div = _flag(kernel, "coalesce_grid_ceil_div", _field(metadata, "coalesce_grid_ceil_div"))
    if (factor > 1) != (axis >= 0) or (ceil_div and factor == 1):
        raise KernelMetadataError(
            f"kernel {kernel!r}: coalesce_factor {factor}, coalesce_axis {axis}, coalesce_grid_ceil_div {ceil_div} "
            "is no launch contract: a factor above 1 goes with an axis 0-2, and a factor of 1 with axis -1 and no "
            "ceil-div (triton-ascend launcher.py)"
        )
    mapped = _flag(kernel, NATIVE_LAUNCHER_FIELD, _field(metadata, NATIVE_LAUNCHER_FIELD))
    if mapped or _field(metadata, "program_grid_transforms") is not None:
        raise KernelMetadataError(
            f"kernel {kernel!r}: its program grid was rewritten by triton-ascend's compiler (program_grid_transforms), "
            "which npu_inductor_compat's C++ wrapper does not launch: the launcher must pass the original grid and "
            "a rewritten one (launcher_args.h, prepareGrid). Use the Python wrapper (cpp_wrapper=False) for it"
        )
    native = _flag(kernel, "native_launcher", _field(metadata, "native_launcher"))
    native = native or _field(metadata, NATIVE_LAUNCHER_FIELD) is not None
    return dataclasses.replace(
        found, coalesce_factor=factor, coalesce_axis=axis, coalesce_grid_ceil_div=ceil_div, native_launcher=native
    )


class LaunchMetadataMissing(KernelMetadataError):
    """A kernel's saved params carry no launch metadata: it was never recorded (unknown is not zero)."""


def read_saved_launch_metadata(kernel: str, params: Mapping[str, Any]) -> KernelLaunchMetadata:
    """The launch metadata ``autotuner-kernel-metadata`` stored in a kernel's saved params. Params without it mean
    the metadata was never recorded, which is an error naming the kernel: launching with no workspace and no locks
    because nothing was written down would corrupt memory on a kernel that needs them."""
    absent = [name for name in FIELDS if name not in params]
    if absent:
        raise LaunchMetadataMissing(
            f"kernel {kernel!r}: its launch metadata was never recorded (saved params lack {', '.join(absent)}); "
            "the NPU C++ launch needs workspace and lock sizes from the compiler, which fix "
            "'autotuner-kernel-metadata' copies into the params when the kernel is saved. Is it disabled?"
        )
    return read_launch_metadata(kernel, params)
