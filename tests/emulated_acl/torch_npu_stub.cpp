// Stub libtorch_npu.so (tests only): the torch_npu symbols the NPU C++ wrapper links against, over the emulated ACL
// runtime (libascendcl.so from emulated_acl.cpp), compiled against torch's and the real torch_npu headers.
//
// at_npu::native::allocate_workspace follows torch_npu's torch_npu/csrc/core/npu/NPUWorkspaceAllocator.cpp and
// framework/utils/OpPreparation.cpp (unsafe_empty_workspace), as released on v2.7.1 and v2.12.0 and on master:
//  - one block per (device, stream); the device is the current one (allocate_with_stream asks c10_npu::GetDevice),
//    not the stream's;
//  - every caller gets the block's pointer: two requests alive at once alias;
//  - a request is padded by 32 bytes and rounded up to 2 MiB (kRoundLarge);
//  - a larger request than the block synchronises the whole device, frees the block and allocates a bigger one (the
//    block never shrinks);
//  - destroying the returned tensor frees nothing (the deleter only updates statistics);
//  - size 0 allocates nothing and gives a null pointer;
//  - the returned uint8 tensor has no elements (no sizes are set), so its data_ptr() is null and the memory is its
//    storage's.
// aoti_torch_get_current_npu_stream (torch_npu's C shim) returns the emulated stream of the device.
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "emulated_acl.h"

namespace {

constexpr uint64_t kRoundLarge = 2097152;  // NPUWorkspaceAllocator.cpp: "aligned to 2 MiB"
constexpr uint64_t kPad = 32;              // NPUWorkspaceAllocator.cpp: alloc_size = size + 32

struct Block {
  void* data = nullptr;
  uint64_t size = 0;
};

std::recursive_mutex allocator_lock;
std::map<std::pair<int32_t, void*>, Block>& blocks() {
  static auto* instance = new std::map<std::pair<int32_t, void*>, Block>();
  return *instance;
}

// torch_npu's current device (c10_npu::GetDevice): under the simulated NPU, torch's PrivateUse1 device guard.
int32_t current_device() {
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  return static_cast<int32_t>(guard->getDevice().index());
}

void check(aclError status, const char* call) {
  if (status != ACL_SUCCESS) {
    throw std::runtime_error(std::string("NPUWorkspaceAllocator: ") + call + " failed with ACL error " +
                             std::to_string(status));
  }
}

void* workspace_block(uint64_t size, aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(allocator_lock);
  Block& block = blocks()[{current_device(), stream}];
  const uint64_t wanted = size + kPad;
  if (block.size < wanted) {
    if (block.data != nullptr) {
      check(aclrtSynchronizeDevice(), "aclrtSynchronizeDevice");
      check(aclrtFree(block.data), "aclrtFree");
      block.data = nullptr;
    }
    block.size = kRoundLarge * ((wanted + kRoundLarge - 1) / kRoundLarge);
    check(aclrtMalloc(&block.data, block.size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc");
  }
  return block.data;
}

void keep(void*) {}  // the deleter frees nothing: the block stays the stream's

struct RegisterDeviceSource {
  RegisterDeviceSource() { emulated_acl_set_device_source(&current_device); }
} register_device_source;

}  // namespace

namespace at_npu {
namespace native {

at::Tensor allocate_workspace(uint64_t workspace_size, aclrtStream stream) {
  const c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(current_device()));
  void* data = workspace_size == 0 ? nullptr : workspace_block(workspace_size, stream);
  c10::Storage storage(c10::Storage::use_byte_size_t(), workspace_size, c10::DataPtr(data, data, &keep, device),
                       nullptr, false);
  return at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                  c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                  caffe2::TypeMeta::Make<uint8_t>());
}

}  // namespace native
}  // namespace at_npu

extern "C" AOTITorchError aoti_torch_get_current_npu_stream(int32_t device_index, void** ret_stream) {
  *ret_stream = emulated_acl_stream(device_index < 0 ? current_device() : device_index);
  return AOTI_TORCH_SUCCESS;
}
