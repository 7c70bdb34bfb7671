// What the generated C-shim ops of the stub libtorch_npu (shim_forwarding.py writes them, one per torch_npu C-shim
// function whose signature torch's CPU shim shares) call: each runs torch's own CPU shim function on host views of
// its tensors (device memory is host memory here) and moves the tensors it returns onto the device.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace emulated_forward {

class HostCall {
 public:
  AtenTensorHandle in(AtenTensorHandle handle);
  AtenTensorHandle* optional(AtenTensorHandle* handle);  // null, or a null handle: None
  const AtenTensorHandle* list(const AtenTensorHandle* handles, int64_t len);
  const AtenTensorHandle** optional_list(const AtenTensorHandle** handles, int64_t len);
  AtenTensorHandle* ret(AtenTensorHandle* slot);  // filled by finish()
  void finish();

 private:
  at::Tensor device_tensor(const at::Tensor& result) const;
  AtenTensorHandle host_handle(AtenTensorHandle handle);

  std::deque<at::Tensor> inputs_;  // the device tensors whose host views the CPU op got
  std::deque<at::Tensor> views_;
  std::deque<AtenTensorHandle> handles_;  // stable addresses for the pointers handed to the CPU op
  std::deque<std::vector<AtenTensorHandle>> lists_;
  std::deque<std::vector<const AtenTensorHandle*>> optional_lists_;
  std::vector<std::pair<AtenTensorHandle*, AtenTensorHandle*>> returns_;  // (the caller's slot, the CPU op's)
};

// Runs `call` (the CPU shim function on `host`'s views) as torch_npu runs an op under ASCEND_LAUNCH_BLOCKING=1: after
// everything issued before it, its results ready when it returns.
AOTITorchError forwarded(const char* name, const std::function<AOTITorchError(HostCall&)>& call);

// The same for a call made on the device tensors themselves (ATen's op on the simulated NPU).
AOTITorchError settled(const char* name, const std::function<AOTITorchError()>& call);
const at::Tensor& device_tensor_of(AtenTensorHandle handle);
std::optional<at::Tensor> optional_tensor_of(AtenTensorHandle* handle);

}  // namespace emulated_forward
