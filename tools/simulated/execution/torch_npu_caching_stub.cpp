// Stub libtorch_npu, continued: torch_npu's caching allocator as code outside torch_npu reaches it, through the block
// handles it exports (core/npu/NPUBlockHandle.h; NPUCachingAllocator.cpp MallocBlock: the device's allocator's malloc
// on the given stream, device -1 meaning the current one; FreeBlock: its free), and torch.npu.empty_cache. Built in one translation unit after torch_npu_stub.cpp (emulated_runtime.py), whose
// allocator lock, workspace blocks, queue drain and forced interleavings it shares.
//
// What it models, from torch_npu/csrc/core/npu/NPUCachingAllocator.cpp (v2.7.1, v2.9.0, v2.12.0, master):
//  - a block belongs to the device and stream it was requested on; freed (its tensor gone) it returns to that
//    stream's pool and serves only a later request on that stream, the best fit at least as large: work queued on
//    the stream before the free runs before any later user's;
//  - a request is rounded up to 512 bytes (kMinBlockSize); a live block is never freed by anyone;
//  - when ACL has no memory left: the device synchronised (npuSynchronizeDevice: every queue emptied, then the
//    device, the allocator's lock released meanwhile), every workspace block of the device freed
//    (NPUWorkspaceAllocator::emptyCache), every cached block released, and the request retried once; then
//    OutOfMemoryError "NPU out of memory. Tried to allocate ...";
//  - torch.npu.empty_cache (DeviceCachingAllocator::emptyCache): the same synchronisation and freeing, no request.

#include <torch_npu/csrc/core/npu/NPUBlockHandle.h>

namespace {

constexpr uint64_t kMinBlockSize = 512;  // NPUCachingAllocator.cpp

struct CachedBlock {
  int32_t device;
  void* stream;
  uint64_t size;
};

std::map<void*, CachedBlock>& live_cached() {
  static auto* instance = new std::map<void*, CachedBlock>();
  return *instance;
}

std::multimap<std::tuple<int32_t, void*, uint64_t>, void*>& cached_pool() {  // (device, stream, size) -> block
  static auto* instance = new std::multimap<std::tuple<int32_t, void*, uint64_t>, void*>();
  return *instance;
}

void return_to_pool(void* data) {
  std::lock_guard<std::recursive_mutex> hold(allocator_lock);
  auto found = live_cached().find(data);
  if (found == live_cached().end()) return;
  const CachedBlock& block = found->second;
  cached_pool().emplace(std::make_tuple(block.device, block.stream, block.size), data);
  live_cached().erase(found);
}

// A cached block of `device` and `stream` at least `size` bytes (the smallest), taken out of the pool; or null.
void* from_pool(int32_t device, void* stream, uint64_t size) {
  auto& pool = cached_pool();
  auto found = pool.lower_bound(std::make_tuple(device, stream, size));
  if (found == pool.end() || std::get<0>(found->first) != device || std::get<1>(found->first) != stream) return nullptr;
  void* data = found->second;
  live_cached()[data] = {device, stream, std::get<2>(found->first)};
  pool.erase(found);
  return data;
}

// NPUWorkspaceAllocator::emptyCache(device) and release_cached_blocks for `device`: after the device has synchronised.
void free_cached_and_workspace(int32_t device) {
  std::lock_guard<std::recursive_mutex> hold(allocator_lock);
  for (auto it = blocks().begin(); it != blocks().end();) {
    if (it->first.first != device) {
      ++it;
      continue;
    }
    if (it->second.data != nullptr) check(aclrtFree(it->second.data), "aclrtFree");
    it = blocks().erase(it);
  }
  auto& pool = cached_pool();
  for (auto it = pool.begin(); it != pool.end();) {
    if (std::get<0>(it->first) != device) {
      ++it;
      continue;
    }
    check(aclrtFree(it->second), "aclrtFree");
    it = pool.erase(it);
  }
}

// npuSynchronizeDevice, then the frees (the caching allocator's out-of-memory retry and torch.npu.empty_cache).
void synchronize_and_free(int32_t device) {
  drain_all();
  check(aclrtSynchronizeDevice(), "aclrtSynchronizeDevice");
  free_cached_and_workspace(device);
  cache_emptied();
}

void* cached_block(uint64_t size, void* stream, int32_t device) {
  const uint64_t rounded = (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::recursive_mutex> hold(allocator_lock);
      if (void* data = from_pool(device, stream, rounded)) return data;
      void* data = nullptr;
      if (aclrtMalloc(&data, rounded, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) {
        live_cached()[data] = {device, stream, rounded};
        return data;
      }
    }
    if (attempt == 0) synchronize_and_free(device);  // "Try to free cached blocks and reallocate"
  }
  TORCH_CHECK_WITH(OutOfMemoryError, false, "NPU out of memory. Tried to allocate ", size_text(rounded), " (NPU ",
                   device, "). If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
                   "fragmentation.");
}

}  // namespace

namespace c10_npu {
namespace NPUCachingAllocator {

void* MallocBlock(size_t size, void* stream, int device) {
  if (device == -1) device = ::current_device();  // the stub's, not c10_npu::current_device
  TORCH_CHECK(stream != nullptr, "MallocBlock: no stream");  // AT_ASSERT(stream)
  before_workspace_request();
  void* data = cached_block(size, stream, device);
  after_workspace_request();
  return data;
}

// A handle here is the block's address: nothing outside torch_npu reads what a handle points to.
void* GetBlockPtr(const void* handle) { return const_cast<void*>(handle); }

void FreeBlock(void* handle) {
  TORCH_CHECK(handle != nullptr, "FreeBlock: no block");
  return_to_pool(handle);
}

}  // namespace NPUCachingAllocator
}  // namespace c10_npu

// torch.npu.empty_cache() on the calling thread, for `device`: 0, or 1 with the error (emulated_torch_npu_last_error).
extern "C" int emulated_torch_npu_empty_cache(int32_t device) {
  try {
    synchronize_and_free(device);
  } catch (const std::exception& err) {
    last_error = err.what();
    return 1;
  }
  return 0;
}
