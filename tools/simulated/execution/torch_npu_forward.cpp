// The stub libtorch_npu's forwarded C-shim ops (torch_npu_forward.h). torch_npu issues each through op-plugin onto
// the current stream; codegen --execute runs wrappers as torch_npu does under ASCEND_LAUNCH_BLOCKING=1, where each op
// has finished when it returns (framework/OpCommand.cpp, RunOpApiV2), so a forwarded op first lets every queue and
// stream finish (npuSynchronizeDevice), then computes on the host. A tensor it returns is placed on the device of its
// first tensor argument, laid out as torch's CPU kernel laid it out; one that views an argument stays a view of it.
#include "torch_npu_forward.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/gather.h>
#include <torch_npu/csrc/inductor/aoti_torch/generated/c_shim_npu.h>

#include <array>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

extern "C" int emulated_torch_npu_synchronize_device(void);  // torch_npu_stub.cpp

namespace emulated_forward {

AtenTensorHandle HostCall::host_handle(AtenTensorHandle handle) {
  const at::Tensor& tensor = *torch::aot_inductor::tensor_handle_to_tensor_pointer(handle);
  inputs_.push_back(tensor);
  if (tensor.defined()) {
    views_.push_back(at::from_blob(tensor.data_ptr(), tensor.sizes(), tensor.strides(),
                                   tensor.options().device(at::kCPU)));
  } else {
    views_.emplace_back();
  }
  return reinterpret_cast<AtenTensorHandle>(&views_.back());
}

AtenTensorHandle HostCall::in(AtenTensorHandle handle) { return host_handle(handle); }

AtenTensorHandle* HostCall::optional(AtenTensorHandle* handle) {
  if (handle == nullptr || *handle == nullptr) return nullptr;
  handles_.push_back(host_handle(*handle));
  return &handles_.back();
}

const AtenTensorHandle* HostCall::list(const AtenTensorHandle* handles, int64_t len) {
  std::vector<AtenTensorHandle>& hosts = lists_.emplace_back();
  for (int64_t i = 0; i < len; ++i) hosts.push_back(host_handle(handles[i]));
  return hosts.data();
}

const AtenTensorHandle** HostCall::optional_list(const AtenTensorHandle** handles, int64_t len) {
  std::vector<const AtenTensorHandle*>& hosts = optional_lists_.emplace_back();
  for (int64_t i = 0; i < len; ++i) {
    hosts.push_back(optional(const_cast<AtenTensorHandle*>(handles[i])));
  }
  return hosts.data();
}

AtenTensorHandle* HostCall::ret(AtenTensorHandle* slot) {
  handles_.push_back(nullptr);
  returns_.emplace_back(slot, &handles_.back());
  return &handles_.back();
}

at::Tensor HostCall::device_tensor(const at::Tensor& result) const {
  if (!result.defined()) return result;
  for (size_t i = 0; i < views_.size(); ++i) {
    const at::Tensor& view = views_[i];
    if (view.defined() && result.storage().is_alias_of(view.storage())) {
      if (result.scalar_type() != view.scalar_type()) {
        throw std::runtime_error("a returned view of an argument with another dtype is not forwarded");
      }
      const at::Tensor& input = inputs_[i];  // the host view starts at the argument's first element
      return input.as_strided(result.sizes(), result.strides(), input.storage_offset() + result.storage_offset());
    }
  }
  c10::Device device(c10::DeviceType::PrivateUse1,
                     c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index());
  for (const at::Tensor& input : inputs_) {
    if (input.defined() && input.device().type() == c10::DeviceType::PrivateUse1) {
      device = input.device();
      break;
    }
  }
  at::Tensor placed = result.is_non_overlapping_and_dense()
                          ? at::empty_strided(result.sizes(), result.strides(), result.options().device(device))
                          : at::empty(result.sizes(), result.options().device(device));
  at::from_blob(placed.data_ptr(), placed.sizes(), placed.strides(), placed.options().device(at::kCPU)).copy_(result);
  return placed;
}

void HostCall::finish() {
  for (auto& [caller, made] : returns_) {
    at::Tensor result;
    if (*made != nullptr) {
      result = *torch::aot_inductor::tensor_handle_to_tensor_pointer(*made);
      aoti_torch_delete_tensor_object(*made);
      *made = nullptr;
    }
    if (caller != nullptr) *caller = torch::aot_inductor::new_tensor_handle(device_tensor(result));  // null: unwanted
  }
}

AOTITorchError settled(const char* name, const std::function<AOTITorchError()>& call) {
  try {
    if (emulated_torch_npu_synchronize_device() != 0) return AOTI_TORCH_FAILURE;
    return call();
  } catch (const std::exception& err) {
    std::cerr << "Exception in aoti_torch_npu_" << name << ": " << err.what() << std::endl;
    return AOTI_TORCH_FAILURE;
  }
}

const at::Tensor& device_tensor_of(AtenTensorHandle handle) {
  return *torch::aot_inductor::tensor_handle_to_tensor_pointer(handle);
}

std::optional<at::Tensor> optional_tensor_of(AtenTensorHandle* handle) {
  if (handle == nullptr || *handle == nullptr) return std::nullopt;
  return device_tensor_of(*handle);
}

AOTITorchError forwarded(const char* name, const std::function<AOTITorchError(HostCall&)>& call) {
  return settled(name, [&]() {
    HostCall host;
    const AOTITorchError status = call(host);  // torch's CPU shim reports its own exception
    if (status != AOTI_TORCH_SUCCESS) return status;
    host.finish();
    return AOTI_TORCH_SUCCESS;
  });
}

}  // namespace emulated_forward

// torch 2.7's CPU shim has no gather, which torch_npu 2.7.1's C shim declares (BERT's backward under its codegen
// calls it): ATen's op on the device tensors, through the simulated NPU; only where the wheel's C shim declares it
// (emulated_runtime.py defines EMULATED_TORCH_NPU_SHIM_<op> for each function c_shim_npu.h declares).
#ifdef EMULATED_TORCH_NPU_SHIM_gather
extern "C" AOTITorchError aoti_torch_npu_gather(AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
                                                int32_t sparse_grad, AtenTensorHandle* ret0) {
  return emulated_forward::settled("gather", [&]() {
    at::Tensor out = at::gather(emulated_forward::device_tensor_of(self), dim,
                                emulated_forward::device_tensor_of(index), sparse_grad != 0);
    *ret0 = torch::aot_inductor::new_tensor_handle(std::move(out));
    return AOTI_TORCH_SUCCESS;
  });
}
#endif

// Convolution is the one op whose output layout is the backend's own choice: the simulated NPU lays it out as torch's
// fake convolution does (what Inductor plans a wrapper with), where the CPU kernel may pick another format for the
// same tensors. These two run ATen's op on the device tensors, through the simulated NPU's convolution (each where
// the wheel's C shim declares it, as gather above).
using emulated_forward::device_tensor_of;
using emulated_forward::optional_tensor_of;

#ifdef EMULATED_TORCH_NPU_SHIM_convolution
extern "C" AOTITorchError aoti_torch_npu_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                                     AtenTensorHandle* bias, const int64_t* stride,
                                                     int64_t stride_len_, const int64_t* padding,
                                                     int64_t padding_len_, const int64_t* dilation,
                                                     int64_t dilation_len_, int32_t transposed,
                                                     const int64_t* output_padding, int64_t output_padding_len_,
                                                     int64_t groups, AtenTensorHandle* ret0) {
  return emulated_forward::settled("convolution", [&]() {
    at::Tensor out = at::convolution(device_tensor_of(input), device_tensor_of(weight), optional_tensor_of(bias),
                                     at::IntArrayRef(stride, stride_len_), at::IntArrayRef(padding, padding_len_),
                                     at::IntArrayRef(dilation, dilation_len_), transposed != 0,
                                     at::IntArrayRef(output_padding, output_padding_len_), groups);
    *ret0 = torch::aot_inductor::new_tensor_handle(std::move(out));
    return AOTI_TORCH_SUCCESS;
  });
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_convolution_backward
extern "C" AOTITorchError aoti_torch_npu_convolution_backward(
    AtenTensorHandle grad_output, AtenTensorHandle input, AtenTensorHandle weight, const int64_t** bias_sizes,
    int64_t bias_sizes_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed, const int64_t* output_padding,
    int64_t output_padding_len_, int64_t groups, const int32_t* output_mask, int64_t output_mask_len_,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2) {
  return emulated_forward::settled("convolution_backward", [&]() {
    std::optional<at::IntArrayRef> sizes;
    if (bias_sizes != nullptr) sizes = at::IntArrayRef(*bias_sizes, bias_sizes_len_);
    if (output_mask_len_ != 3) throw std::runtime_error("output_mask must have 3 entries");
    const std::array<bool, 3> mask{output_mask[0] != 0, output_mask[1] != 0, output_mask[2] != 0};
    auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
        device_tensor_of(grad_output), device_tensor_of(input), device_tensor_of(weight), sizes,
        at::IntArrayRef(stride, stride_len_), at::IntArrayRef(padding, padding_len_),
        at::IntArrayRef(dilation, dilation_len_), transposed != 0,
        at::IntArrayRef(output_padding, output_padding_len_), groups, mask);
    // a gradient the wrapper does not want has a null slot (and is masked out)
    if (ret0 != nullptr) *ret0 = torch::aot_inductor::new_tensor_handle(std::move(grad_input));
    if (ret1 != nullptr) *ret1 = torch::aot_inductor::new_tensor_handle(std::move(grad_weight));
    if (ret2 != nullptr) *ret2 = torch::aot_inductor::new_tensor_handle(std::move(grad_bias));
    return AOTI_TORCH_SUCCESS;
  });
}
#endif
