"""The C++ an NPU kernel launch needs: a small ACL runtime prelude and, per kernel, the launch block.

Pure text generation (no torch import), fed only by validated :class:`KernelLaunchMetadata`, so it can be read,
golden-tested and fuzzed on its own; ``npu_cpp_wrapper`` places it into Inductor's C++ wrapper.

Per launch the block:
- counts the blocks (``grid_0 * grid_1 * grid_2``, overflow-checked, at most ``UINT32_MAX`` for ACL);
- takes ``workspace_size * blocks`` bytes of workspace and the lock buffer from torch_npu's stream-aware workspace
  allocator (``at_npu::native::allocate_workspace``), every size computed with overflow checks;
- initialises the locks *on the launch stream*: ``aclrtMemsetAsync`` when every byte of the image is the same,
  otherwise ``aclrtMemcpyAsync`` from a pinned host image that is never freed or rewritten. Never a blocking copy,
  which could race an earlier launch still using a recycled block and cannot be captured into an aclgraph;
- packs the arguments the way triton-ascend kernels read them: ``[ffts_addr,] sync_block_lock, workspace_addr,
  kernel arguments..., grid_0, grid_1, grid_2`` (no lock or workspace pointer for ``force_simt_only`` kernels);
- launches with ``aclrtLaunchKernelWithHostArgs``; every ACL return code is checked, and the error names the kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npu_inductor_compat.common.kernel_metadata import CACHE_LINE_BYTES, INT64_BYTES, KernelLaunchMetadata

NAMESPACE = "npu_inductor_compat_rt"
SLOTS_PER_LINE = CACHE_LINE_BYTES // INT64_BYTES

# Markers around the prelude's two parts, so tools (and the emulated-ACL tests) can find them in a wrapper.
RUNTIME_BEGIN = "// ---- npu_inductor_compat: NPU launch runtime (begin) ----"
RUNTIME_END = "// ---- npu_inductor_compat: NPU launch runtime (end) ----"
ALLOCATOR_BEGIN = "// ---- npu_inductor_compat: NPU scratch allocation (begin) ----"
ALLOCATOR_END = "// ---- npu_inductor_compat: NPU scratch allocation (end) ----"

RUNTIME = rf"""{RUNTIME_BEGIN}
#include <acl/acl.h>
#include <acl/acl_rt.h>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {NAMESPACE} {{

[[noreturn]] inline void fail(const char* kernel, const std::string& what) {{
  throw std::runtime_error(std::string("NPU kernel ") + kernel + ": " + what);
}}

// Every ACL call goes through here: a failure names the kernel and the call.
inline void check(aclError status, const char* kernel, const char* call) {{
  if (status != ACL_SUCCESS) {{
    fail(kernel, std::string(call) + " failed with ACL error " + std::to_string(static_cast<long long>(status)));
  }}
}}

inline uint64_t mul(uint64_t a, uint64_t b, const char* kernel, const char* what) {{
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {{
    fail(kernel, std::string(what) + " overflows 64 bits (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  }}
  return product;
}}

inline uint64_t add(uint64_t a, uint64_t b, const char* kernel, const char* what) {{
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {{
    fail(kernel, std::string(what) + " overflows 64 bits (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  }}
  return sum;
}}

// The blocks of one launch; ACL takes their count as uint32_t.
inline uint32_t blocks(uint64_t grid_0, uint64_t grid_1, uint64_t grid_2, const char* kernel) {{
  const uint64_t count = mul(mul(grid_0, grid_1, kernel, "block count"), grid_2, kernel, "block count");
  if (count > UINT32_MAX) {{
    fail(kernel, "block count " + std::to_string(count) + " exceeds ACL's uint32_t launch limit");
  }}
  return static_cast<uint32_t>(count);
}}

// A lock buffer: `ordered_slots` int64 slots for the ordered locks, then `unordered` locks of `stride_slots` slots
// each (one cache line for the participant count, two per participant).
struct LockLayout {{
  uint64_t ordered_slots;
  uint64_t unordered;
  uint64_t participants;
  uint64_t stride_slots;
  uint64_t bytes;
}};

inline LockLayout lock_layout(uint64_t ordered_slots, uint64_t unordered, uint64_t participants, const char* kernel) {{
  LockLayout layout{{ordered_slots, unordered, participants, 0, 0}};
  const uint64_t lines = add(1, mul(2, participants, kernel, "lock size"), kernel, "lock size");
  layout.stride_slots = mul(lines, {SLOTS_PER_LINE}, kernel, "lock size");
  const uint64_t unordered_slots = mul(unordered, layout.stride_slots, kernel, "lock size");
  const uint64_t slots = add(ordered_slots, unordered_slots, kernel, "lock size");
  layout.bytes = mul(slots, sizeof(int64_t), kernel, "lock size");
  return layout;
}}

// Host image of a lock buffer: ordered slots hold `init`; each unordered lock's first slot holds the participant
// count, the rest 0. Each distinct image is built once in pinned host memory and never freed or rewritten, so an
// asynchronous copy still queued on a stream can always read it.
inline const void* lock_image(const LockLayout& layout, int64_t init, const char* kernel) {{
  using Key = std::tuple<uint64_t, uint64_t, uint64_t, int64_t>;
  static std::mutex guard;
  static std::map<Key, void*> images;
  std::lock_guard<std::mutex> hold(guard);
  const Key key{{layout.ordered_slots, layout.unordered, layout.participants, init}};
  auto found = images.find(key);
  if (found != images.end()) {{
    return found->second;
  }}
  void* host = nullptr;
  check(aclrtMallocHost(&host, layout.bytes), kernel, "aclrtMallocHost (sync-block lock image)");
  auto* slots = static_cast<int64_t*>(host);
  for (uint64_t slot = 0; slot < layout.ordered_slots; ++slot) {{
    slots[slot] = init;
  }}
  for (uint64_t lock = 0; lock < layout.unordered; ++lock) {{
    int64_t* first = slots + layout.ordered_slots + lock * layout.stride_slots;
    first[0] = static_cast<int64_t>(layout.participants);
    std::memset(first + 1, 0, (layout.stride_slots - 1) * sizeof(int64_t));
  }}
  images.emplace(key, host);
  return host;
}}

// The wrapper's device guard: makes `index` current, and restores the previous device when it goes out of scope.
class DeviceGuard {{
 public:
  explicit DeviceGuard(int32_t index) {{
    if (aclrtGetDevice(&previous_) != ACL_SUCCESS) {{
      previous_ = -1;  // no device current on this thread yet: nothing to restore
    }}
    set_index(index);
  }}
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  void set_index(int32_t index) {{
    if (index != current_) {{
      check(aclrtSetDevice(index), "(device guard)", "aclrtSetDevice");
      current_ = index;
    }}
  }}
  ~DeviceGuard() {{
    if (previous_ >= 0 && previous_ != current_) {{
      aclrtSetDevice(previous_);  // a destructor must not throw; the next ACL call reports a broken device
    }}
  }}

 private:
  int32_t previous_ = -1;
  int32_t current_ = -1;
}};

// Load a kernel binary written by the Triton compiler and return its function handle.
inline aclrtFuncHandle load_kernel(const std::string& path, const char* name, const char* mode,
                                   const std::optional<std::string>& directory) {{
  const std::string file =
      directory ? (std::filesystem::path(*directory) / std::filesystem::path(path).filename()).string() : path;
  std::ifstream stream(file, std::ios::binary);
  if (!stream) {{
    fail(name, "cannot open kernel binary " + file);
  }}
  const std::vector<char> binary((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  aclrtBinaryLoadOption options[2] = {{}};
  options[0].type = ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD;
  options[0].value.isLazyLoad = 0;
  options[1].type = ACL_RT_BINARY_LOAD_OPT_MAGIC;
  options[1].value.magic =
      std::string(mode) == "aiv" ? ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE : ACL_RT_BINARY_MAGIC_ELF_AICORE;
  aclrtBinaryLoadOptions load{{}};
  load.options = options;
  load.numOpt = 2;
  aclrtBinHandle module = nullptr;
  check(aclrtBinaryLoadFromData(binary.data(), binary.size(), &load, &module), name, "aclrtBinaryLoadFromData");
  aclrtFuncHandle function = nullptr;
  check(aclrtBinaryGetFunction(module, name, &function), name, "aclrtBinaryGetFunction");
  return function;
}}

}}  // namespace {NAMESPACE}

// torch_npu's Python-side device overrides name their guard AOTINpuGuard: the same job.
using AOTINpuGuard = {NAMESPACE}::DeviceGuard;
{RUNTIME_END}
"""

ALLOCATOR = f"""{ALLOCATOR_BEGIN}
#include <torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h>

namespace {NAMESPACE} {{

// Device scratch from torch_npu's stream-aware workspace allocator. The block returns to the allocator when this
// object dies, and is handed out again only to work ordered after this launch on the same stream.
struct Scratch {{
  at::Tensor holder;
  void* ptr = nullptr;
  Scratch(uint64_t bytes, aclrtStream stream, const char* kernel, const char* what) {{
    holder = at_npu::native::allocate_workspace(bytes, stream);
    ptr = holder.data_ptr();
    if (ptr == nullptr) {{
      fail(kernel, "allocating " + std::to_string(bytes) + " bytes of " + what + " failed");
    }}
  }}
}};

}}  // namespace {NAMESPACE}
{ALLOCATOR_END}
"""

PRELUDE = RUNTIME + ALLOCATOR


@dataclass(frozen=True)
class ArgField:
    """One kernel argument in the packed argument struct: its C++ type, field name and initialiser."""

    ctype: str
    name: str
    value: str

    def declaration(self) -> str:
        return f"{self.ctype} {self.name} __attribute__((aligned(alignof({self.ctype}))));"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _byte_uniform(value: int) -> int | None:
    """The byte every byte of ``value`` (as little-endian int64) equals, if there is one."""
    raw = (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    return raw[0] if len(set(raw)) == 1 else None


def describe(meta: KernelLaunchMetadata) -> str:
    """One line saying what a kernel's launch needs, for the generated code and for people."""
    if meta.force_simt_only:
        return "force_simt_only: no workspace or lock pointers"
    parts = [f"workspace {meta.workspace_size} B/block" if meta.uses_workspace else "no workspace"]
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
        parts.append(f"lock init {meta.lock_init_val}")
    return "; ".join(parts)


def render_launch(meta: KernelLaunchMetadata, kernel_var: str, args: list[ArgField], *, ffts: bool = False) -> str:
    """The C++ statements that launch ``kernel_var`` on ``stream_`` once ``grid_0..2`` and the argument values are
    in scope (inside Inductor's per-kernel call wrapper)."""
    if not _IDENTIFIER.fullmatch(kernel_var):
        raise ValueError(f"kernel variable {kernel_var!r} is not a C++ identifier")
    if not _IDENTIFIER.fullmatch(meta.kernel):
        raise ValueError(f"kernel name {meta.kernel!r} is not a C++ identifier")
    ns = NAMESPACE
    lines = [
        f"// npu_inductor_compat launch of {meta.kernel}: {describe(meta)}",
        f'static constexpr const char* npu_kernel_ = "{meta.kernel}";',
        f"const uint32_t npu_blocks_ = {ns}::blocks(grid_0, grid_1, grid_2, npu_kernel_);",
    ]
    fields = []
    if ffts:
        lines += [
            "void* npu_ffts_ = nullptr;",
            f'{ns}::check(aclrtGetHardwareSyncAddr(&npu_ffts_), npu_kernel_, "aclrtGetHardwareSyncAddr");',
        ]
        fields.append(ArgField("void*", "ffts_addr", "npu_ffts_"))
    if not meta.force_simt_only:
        lines += _workspace(meta) + _locks(meta)
        fields += [
            ArgField("void*", "sync_block_lock", "npu_locks_.ptr" if meta.uses_locks else "nullptr"),
            ArgField("void*", "workspace_addr", "npu_workspace_.ptr" if meta.uses_workspace else "nullptr"),
        ]
    fields += args
    fields += [ArgField("int32_t", f"grid_{axis}", f"static_cast<int32_t>(grid_{axis})") for axis in range(3)]
    lines.append("struct __attribute__((packed)) {")
    lines += [f"  {field.declaration()}" for field in fields]
    lines.append("} npu_args_ = {")
    lines += [f"  {field.value}," for field in fields]
    lines.append("};")
    lines.append(
        f"{ns}::check(aclrtLaunchKernelWithHostArgs({kernel_var}, npu_blocks_, stream_, nullptr, &npu_args_, "
        'sizeof(npu_args_), nullptr, 0), npu_kernel_, "aclrtLaunchKernelWithHostArgs");'
    )
    return "\n".join(lines)


def _workspace(meta: KernelLaunchMetadata) -> list[str]:
    if not meta.uses_workspace:
        return []
    ns = NAMESPACE
    return [
        f"const uint64_t npu_workspace_bytes_ = "
        f'{ns}::mul({meta.workspace_size}ULL, npu_blocks_, npu_kernel_, "workspace size");',
        f'{ns}::Scratch npu_workspace_(npu_workspace_bytes_, stream_, npu_kernel_, "workspace");',
    ]


def _locks(meta: KernelLaunchMetadata) -> list[str]:
    if not meta.uses_locks:
        return []
    ns = NAMESPACE
    if meta.sync_block_lock_layout:
        ordered_slots, unordered = meta.ordered_locks * SLOTS_PER_LINE, meta.unordered_locks
    else:
        ordered_slots, unordered = meta.lock_num, 0  # lock_num counts int64 slots already
    participants = f'{ns}::mul(npu_blocks_, {meta.participants(1)}ULL, npu_kernel_, "lock participants")'
    lines = [
        f"const {ns}::LockLayout npu_lock_layout_ = "
        f"{ns}::lock_layout({ordered_slots}ULL, {unordered}ULL, {participants}, npu_kernel_);",
        f'{ns}::Scratch npu_locks_(npu_lock_layout_.bytes, stream_, npu_kernel_, "sync-block locks");',
    ]
    uniform = _byte_uniform(meta.lock_init_val) if unordered == 0 else None
    if uniform is not None:  # every byte of the buffer is the same: one stream-ordered memset
        lines.append(
            f"{ns}::check(aclrtMemsetAsync(npu_locks_.ptr, npu_lock_layout_.bytes, {uniform}, npu_lock_layout_.bytes, "
            'stream_), npu_kernel_, "aclrtMemsetAsync (sync-block locks)");'
        )
    else:  # a stream-ordered copy from the persistent host image
        lines.append(
            f"{ns}::check(aclrtMemcpyAsync(npu_locks_.ptr, npu_lock_layout_.bytes, {ns}::lock_image(npu_lock_layout_, "
            f"{meta.lock_init_val}LL, npu_kernel_), npu_lock_layout_.bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_), "
            'npu_kernel_, "aclrtMemcpyAsync (sync-block locks)");'
        )
    return lines
