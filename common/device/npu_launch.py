"""The C++ an NPU kernel launch needs: the launch runtime (a real C++ file, ``npu_launch_runtime.h``) and, per kernel,
the launch block."""

# Pure text generation (no torch import), fed only by validated :class:`KernelLaunchMetadata`, so it can be read,
# golden-tested and fuzzed on its own; ``npu_cpp_wrapper`` places it into Inductor's C++ wrapper.

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from npu_inductor_compat.common.device.kernel_metadata import CACHE_LINE_BYTES, INT64_BYTES, KernelLaunchMetadata

NAMESPACE = "npu_inductor_compat_rt"
SLOTS_PER_LINE = CACHE_LINE_BYTES // INT64_BYTES
RUNTIME_FILE = "npu_launch_runtime.h"
# torch has no cpp_wrapper/npu.h: the wrapper includes the common header, then this package's runtime.
NPU_WRAPPER_HEADER = "torch/csrc/inductor/cpp_wrapper/common.h"


def runtime_source() -> str:
    """The launch runtime's C++ (package data), spliced into every NPU C++ wrapper."""
    return resources.files("npu_inductor_compat.common.device").joinpath(RUNTIME_FILE).read_text()


@dataclass(frozen=True)
class ArgField:
    """One kernel argument in the packed argument struct: its C++ type, field name and initialiser."""

    ctype: str
    name: str
    value: str

    def declaration(self) -> str:
        return f"{self.ctype} {self.name} __attribute__((aligned({self.alignment})));"

    @property
    def alignment(self) -> int:
        """triton-ascend's rule (driver.py, make_launcher): pointers and 64-bit scalars on 8 bytes, every other
        scalar (i8 and i16 included) on 4. torch_npu's wrapper aligns i8/i16 on their own size; the kernel's own
        launcher decides (docs/npu-launch.md, "How our launch differs")."""
        wide = self.ctype.endswith("*") or self.ctype in ("int64_t", "uint64_t", "double")
        return 8 if wide else 4


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _byte_uniform(value: int) -> int | None:
    """The byte every byte of ``value`` (as little-endian int64) equals, if there is one."""
    raw = (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    return raw[0] if len(set(raw)) == 1 else None


def describe(meta: KernelLaunchMetadata) -> str:
    """One line saying what a kernel's launch needs, for the generated code and for people."""
    parts = []
    if meta.pure_simt:
        parts.append("pure SIMT: no workspace or lock pointers")
    else:
        parts.append(f"workspace {meta.workspace_size} B/block" if meta.uses_workspace else "no workspace")
        if meta.sync_block_lock_layout and meta.uses_locks:
            parts.append(
                f"locks: {meta.ordered_locks} ordered, {meta.unordered_locks} unordered "
                f"(sync_block_lock_layout {meta.sync_block_lock_layout:#x}, mix_mode {meta.mix_mode or '-'}, "
                f"participants x{meta.participants(1)})"
            )
        elif meta.uses_locks:
            parts.append(f"locks: {meta.lock_num} int64 slots (lock_num)")
        else:
            parts.append("no locks")
        if meta.uses_locks:
            parts.append(f"ordered lock init {ordered_init(meta)}")
    if meta.dynamic_unified_buffer:
        parts.append(f"SIMT, dynamic unified buffer {meta.shared_mem_dynamic_size} B")
    if meta.coalesce_factor > 1:
        rounding = "rounded up" if meta.coalesce_grid_ceil_div else "exactly"
        parts.append(f"grid axis {meta.coalesce_axis} divided by {meta.coalesce_factor} ({rounding})")
    if meta.native_launcher:
        parts.append("native launcher's trailing slots")
    return "; ".join(parts)


def ordered_init(meta: KernelLaunchMetadata) -> int:
    """The value the ordered lock slots start with: ``lock_init_val``, except beside unordered locks, where
    triton-ascend's launcher starts the whole buffer at 0 but for the participant counts (make_launcher,
    sync_block_lock_layout); its compiler sets lock_init_val to 0 for such kernels anyway."""
    return 0 if meta.unordered_locks and meta.sync_block_lock_layout else meta.lock_init_val


def render_launch(
    meta: KernelLaunchMetadata,
    kernel_var: str,
    args: list[ArgField],
    *,
    ffts: bool = False,
    all_blocks_parallel: bool = False,
) -> str:
    """The C++ statements that launch ``kernel_var`` on ``stream_`` (of the current device) once ``grid_0..2`` and
    the argument values are in scope (inside Inductor's per-kernel call wrapper).

    Per launch the block:

    - counts the grid's blocks (each dimension range-checked before it is narrowed); more than 65535 is an error
      naming the kernel and the grid, unless the kernel was compiled for all-blocks-parallel mode, where blockDim is
      capped at the device's physical cores (vector cores for "aiv" kernels, AI cores otherwise), asked from ACL at
      run time;
    - takes the workspace and the lock buffer from one request to torch_npu's workspace allocator and initialises the
      locks on the launch stream (:func:`_scratch`);
    - packs the arguments as triton-ascend's launcher does: ``[ffts_addr,] sync_block_lock, workspace_addr, kernel
      arguments..., grid_0, grid_1, grid_2`` (no lock or workspace pointer for pure-SIMT kernels; for its native
      launcher, then two null scratch slots for pure-SIMT kernels and a null debug slot); pointers and 64-bit
      scalars 8-aligned, every other scalar 4-aligned (:attr:`ArgField.alignment`); a grid the compiler coalesced is
      divided by its factor along its axis first (the launched grid, its blocks and workspace follow it);
    - launches with ``aclrtLaunchKernelWithHostArgs``, passing the dynamic unified-buffer size of SIMT kernels built
      for 910_95 in the launch config; every ACL return code is checked, and the error names the kernel;
    - refuses an aclgraph capture of the stream when the launch takes workspace or locks, naming the kernel and
      which (the workspace block could be freed under the captured graph); a launch with neither is captured;
    - does all of that after the block count in work handed to torch_npu's task queue
      (``at_npu::native::OpCommand::RunOpApiV2``), so it reaches the stream after the torch_npu ops issued before it;
      its scratch comes from torch_npu's per-stream workspace block there, from the caching allocator when the queue
      is off and the work runs on the calling thread (``npu_caller_``; see the runtime's ``Scratch``).
    """
    if not _IDENTIFIER.fullmatch(kernel_var):
        raise ValueError(f"kernel variable {kernel_var!r} is not a C++ identifier")
    if not _IDENTIFIER.fullmatch(meta.kernel):
        raise ValueError(f"kernel name {meta.kernel!r} is not a C++ identifier")
    ns = NAMESPACE
    capped = all_blocks_parallel and not meta.has_auto_blockify_blacklist_op
    takes = _scratch_taken(meta)
    flag = "true" if capped else "false"
    grid = ["grid_0", "grid_1", "grid_2"]
    coalesced = []
    if meta.coalesce_factor > 1:  # the grid the kernel is launched on: divided along the compiler's axis
        axis, ceil = meta.coalesce_axis, "true" if meta.coalesce_grid_ceil_div else "false"
        coalesced = [
            f"const uint32_t npu_coalesced_ = {ns}::coalesce(grid_{axis}, {meta.coalesce_factor}U, {ceil}, {axis}, "
            "npu_kernel_);"
        ]
        grid[axis] = "npu_coalesced_"
    outside = [
        f"// npu_inductor_compat launch of {meta.kernel}: {describe(meta)}"
        + ("; all blocks parallel" if capped else ""),
        f'static constexpr const char* npu_kernel_ = "{meta.kernel}";',
        *([f'{ns}::refuse_capture(npu_kernel_, "{takes}");'] if takes else []),
        *coalesced,
        f"const uint64_t npu_grid_blocks_ = {ns}::grid_blocks({', '.join(grid)}, {flag}, npu_kernel_);",
        f"const int32_t npu_device_ = {ns}::current_device();",
        f"const uint32_t npu_block_dim_ = {ns}::block_dim(npu_grid_blocks_, {flag}, npu_device_, "
        f"{'true' if meta.vector_cores else 'false'}, npu_kernel_);",
    ]
    lines: list[str] = []
    fields = []
    if ffts:
        lines += [
            "void* npu_ffts_ = nullptr;",
            f'{ns}::check(aclrtGetHardwareSyncAddr(&npu_ffts_), npu_kernel_, "aclrtGetHardwareSyncAddr");',
        ]
        fields.append(ArgField("void*", "ffts_addr", "npu_ffts_"))
    if not meta.pure_simt:
        lines += _scratch(meta)
        fields += [
            ArgField("void*", "sync_block_lock", "npu_scratch_.locks" if meta.uses_locks else "nullptr"),
            ArgField("void*", "workspace_addr", "npu_scratch_.workspace" if meta.uses_workspace else "nullptr"),
        ]
    fields += args
    fields += [ArgField("int32_t", f"grid_{axis}", f"static_cast<int32_t>({grid[axis]})") for axis in range(3)]
    if meta.native_launcher:  # triton-ascend's native launcher (launcher_args.h, ArgLayout): zeroed, print off
        names = ["global_scratch", "profile_scratch"] if meta.pure_simt else []
        fields += [ArgField("void*", name, "nullptr") for name in [*names, "debug_tunnel"]]
    lines.append("struct __attribute__((packed)) {")
    lines += [f"  {field.declaration()}" for field in fields]
    lines.append("} npu_args_ = {")
    lines += [f"  {field.value}," for field in fields]
    lines.append("};")
    config = "nullptr"
    if meta.dynamic_unified_buffer:
        lines += [
            "aclrtLaunchKernelAttr npu_attr_{};",
            "npu_attr_.id = ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE;",
            f"npu_attr_.value.dynUBufSize = {meta.shared_mem_dynamic_size}U;",
            "aclrtLaunchKernelCfg npu_config_{&npu_attr_, 1};",
        ]
        config = "&npu_config_"
    lines.append(
        f"{ns}::check(aclrtLaunchKernelWithHostArgs({kernel_var}, npu_block_dim_, stream_, {config}, &npu_args_, "
        'sizeof(npu_args_), nullptr, 0), npu_kernel_, "aclrtLaunchKernelWithHostArgs");'
    )
    # Through torch_npu's task queue, as torch_npu's own C++ wrapper launches (launchKernel: OpCommand::RunOpApiV2):
    # queued behind the torch_npu ops issued before it, with its scratch taken and its locks set in the queued work.
    queued = [
        *(["const std::thread::id npu_caller_ = std::this_thread::get_id();"] if takes and not meta.pure_simt else []),
        "auto npu_launch_ = [=]() -> int {",
        *(f"  {line}" for line in lines),
        "  return 0;",
        "};",
        "at_npu::native::OpCommand::RunOpApiV2(npu_kernel_, npu_launch_);",
    ]
    return "\n".join(outside + queued)


def _scratch_taken(meta: KernelLaunchMetadata) -> str:
    """What of torch_npu's workspace block the launch takes, in words ("" for nothing)."""
    taken = [what for what, used in (("workspace", meta.uses_workspace), ("sync-block locks", meta.uses_locks)) if used]
    return " and ".join(taken)


def _scratch(meta: KernelLaunchMetadata) -> list[str]:
    """The C++ that takes a launch's workspace and lock buffer and initialises its locks (none for neither).

    The workspace (``workspace_size`` x the grid's blocks) and the lock buffer come from ONE request, carved in two,
    so the two can neither alias nor free each other: to torch_npu's workspace allocator in queued work, to its caching
    allocator on the calling thread (the runtime file, ``npu_launch_runtime.h``, ``Scratch``, has the allocator facts);
    every size is overflow-checked. The locks are initialised *on the launch stream*: ``aclrtMemsetAsync`` when every
    byte is the same, otherwise ``aclrtMemcpyAsync`` from a pinned host image (bounded cache). Never a blocking copy,
    which could race an earlier launch still using the recycled block and cannot be captured into an aclgraph.
    """
    if not (meta.uses_workspace or meta.uses_locks):
        return []
    ns = NAMESPACE
    lines = []
    workspace = "0"
    if meta.uses_workspace:  # triton-ascend: workspace_size x the grid's blocks (before any all-blocks cap)
        lines.append(
            f"const uint64_t npu_workspace_bytes_ = "
            f'{ns}::mul({meta.workspace_size}ULL, npu_grid_blocks_, npu_kernel_, "workspace size");'
        )
        workspace = "npu_workspace_bytes_"
    if not meta.uses_locks:
        lines.append(f"{ns}::Scratch npu_scratch_({workspace}, 0, stream_, npu_caller_, npu_kernel_);")
        return lines
    if meta.sync_block_lock_layout:
        ordered_slots, unordered = meta.ordered_locks * SLOTS_PER_LINE, meta.unordered_locks
    else:
        ordered_slots, unordered = meta.lock_num, 0  # lock_num counts int64 slots already
    # participants: the blocks actually launched (after the cap), x2 in mix mode with sub-block binding
    participants = f'{ns}::mul(npu_block_dim_, {meta.participants(1)}ULL, npu_kernel_, "lock participants")'
    lines += [
        f"const {ns}::LockLayout npu_lock_layout_ = "
        f"{ns}::lock_layout({ordered_slots}ULL, {unordered}ULL, {participants}, npu_kernel_);",
        f"{ns}::Scratch npu_scratch_({workspace}, npu_lock_layout_.bytes, stream_, npu_caller_, npu_kernel_);",
    ]
    init = ordered_init(meta)
    uniform = _byte_uniform(init) if unordered == 0 else None
    if uniform is not None:  # every byte of the buffer is the same: one stream-ordered memset
        lines.append(
            f"{ns}::check(aclrtMemsetAsync(npu_scratch_.locks, npu_lock_layout_.bytes, {uniform}, "
            'npu_lock_layout_.bytes, stream_), npu_kernel_, "aclrtMemsetAsync (sync-block locks)");'
        )
    else:  # a stream-ordered copy from the persistent host image
        lines.append(
            f"{ns}::copy_lock_image(npu_scratch_.locks, npu_lock_layout_, {init}LL, npu_device_, stream_, npu_kernel_);"
        )
    return lines
