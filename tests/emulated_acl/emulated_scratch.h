// Stands in for the prelude's allocation part (torch_npu's stream-aware workspace allocator): a block goes back to
// the emulated pool when the Scratch dies and the next request of that size on the stream gets the same block.
#pragma once
#include <cstdint>
#include <string>

namespace emulated_acl {
void* allocate(uint64_t bytes, aclrtStream stream, const char* label);
void release(void* block, uint64_t bytes);
aclrtStream stream();
void* device_buffer(uint64_t bytes, const char* label);
void error(const std::string& message);
void report();
}  // namespace emulated_acl

namespace npu_inductor_compat_rt {
struct Scratch {
  void* ptr = nullptr;
  uint64_t bytes = 0;
  Scratch(uint64_t size, aclrtStream stream, const char* kernel, const char* what)
      : ptr(emulated_acl::allocate(size, stream, what)), bytes(size) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { emulated_acl::release(ptr, bytes); }
};
}  // namespace npu_inductor_compat_rt
