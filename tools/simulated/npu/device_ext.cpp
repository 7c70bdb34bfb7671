// Simulated NPU device: PyTorch's PrivateUse1 backend backed by host (CPU) memory.
//
// Loaded by npu_inductor_compat/tools/simulated/npu/device.py through torch.utils.cpp_extension, which renames
// PrivateUse1 to "npu". Nothing here talks to real hardware: memory comes from c10::alloc_cpu, a few kernels
// (allocation, copies, fills, views) are written against that memory directly, and every other operator runs
// on CPU through at::native::cpu_fallback, counted per operator (fallback_counts()). Convolution never reaches that
// fallback: for a PrivateUse1 tensor ATen's convolution calls convolution_overrideable (and its backward
// convolution_backward_overrideable), whose default kernel (CompositeExplicitAutograd) raises "not implemented" before
// any backend fallback is looked up, and CPU has no kernel of its own for them; both are registered here, calling
// the CPU convolution on aliases of the device memory. The device/stream guard, the PrivateUse1 hooks and the raw-stream
// getter answer what torch.compile asks of a device while tracing (default stream, generators, contexts), and
// torch.autocast("npu") gets ATen's published op lists (CUDA's policy).
//
// One source for torch 2.7.1, 2.9.1 and 2.12.1: only virtuals present in all three are marked `override`;
// the few that exist only in newer releases are declared without it (they override where the base has them).

// Narrow includes instead of <torch/extension.h> (which pulls in all of libtorch's C++ API) keep the build short.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/library.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/ConvUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace simnpu {

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;
// Two devices, so tests can see that work lands on the tensor's device (an Ascend server has several).
constexpr c10::DeviceIndex kDeviceCount = 2;

thread_local c10::DeviceIndex current_device_index = 0;

c10::DeviceIndex checked_index(c10::DeviceIndex index) {
  if (index < 0) {
    return current_device_index;
  }
  TORCH_CHECK(index < kDeviceCount, "simulated npu: invalid device index ", static_cast<int>(index),
              " (the simulated npu has ", static_cast<int>(kDeviceCount), " devices)");
  return index;
}

// ------------------------------------------------------------------------------------------------ allocator
// Host memory, tagged with the PrivateUse1 device. Live bytes are counted for memory_allocated().
std::mutex live_mutex;
std::unordered_map<void*, size_t> live_blocks;
std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void free_block(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = live_blocks.find(ptr);
    if (it != live_blocks.end()) {
      live_bytes -= static_cast<int64_t>(it->second);
      live_blocks.erase(it);
    }
  }
  c10::free_cpu(ptr);
}

struct HostBackedAllocator final : public at::Allocator {
  at::DataPtr allocate(size_t nbytes) override {
    const c10::Device device(kDevice, current_device_index);
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_block, device};
    }
    void* ptr = c10::alloc_cpu(nbytes);
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live_blocks[ptr] = nbytes;
    }
    const int64_t now = live_bytes += static_cast<int64_t>(nbytes);
    int64_t peak = peak_bytes.load();
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
    }
    return {ptr, ptr, &free_block, device};
  }

  at::DeleterFnPtr raw_deleter() const override {
    return &free_block;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count > 0) {
      std::memcpy(dest, src, count);
    }
  }
};

HostBackedAllocator host_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_allocator);

// ------------------------------------------------------------------------------------------------ kernels
bool on_device(const at::Tensor& t) {
  return t.device().type() == kDevice;
}

// A CPU tensor aliasing the same host memory (no copy, no ownership); valid while `t` lives.
at::Tensor host_alias(const at::Tensor& t) {
  if (!on_device(t)) {
    return t;
  }
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(c10::kCPU));
}

void check_device_arg(std::optional<c10::Device> device_opt) {
  if (device_opt.has_value()) {
    TORCH_CHECK(device_opt->type() == kDevice, "simulated npu: empty() asked for device ", device_opt->str());
    checked_index(device_opt->index());
  }
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype_opt,
                               std::optional<at::Layout> layout_opt, std::optional<c10::Device> device_opt,
                               std::optional<bool> pin_memory_opt,
                               std::optional<at::MemoryFormat> memory_format_opt) {
  TORCH_CHECK(!layout_opt.has_value() || *layout_opt == at::kStrided, "simulated npu: only strided tensors");
  check_device_arg(device_opt);
  const c10::OptionalDeviceGuard guard(device_opt);  // the allocator tags memory with the current device
  const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, &host_allocator, keys, c10::dtype_or_default(dtype_opt),
                                   memory_format_opt);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype_opt,
                         std::optional<at::Layout> layout_opt, std::optional<c10::Device> device_opt,
                         std::optional<bool> pin_memory_opt) {
  TORCH_CHECK(!layout_opt.has_value() || *layout_opt == at::kStrided, "simulated npu: only strided tensors");
  check_device_arg(device_opt);
  const c10::OptionalDeviceGuard guard(device_opt);  // the allocator tags memory with the current device
  const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, &host_allocator, keys, c10::dtype_or_default(dtype_opt));
}

// Every direction (cpu->npu, npu->cpu, npu->npu) is a host copy between aliases; dtype/stride handling is CPU's.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.sizes() == dst.sizes(), "simulated npu: _copy_from between different sizes ", self.sizes(),
              " and ", dst.sizes());
  TORCH_CHECK(self.device().is_cpu() || on_device(self), "simulated npu: cannot copy from ", self.device().str());
  TORCH_CHECK(dst.device().is_cpu() || on_device(dst), "simulated npu: cannot copy to ", dst.device().str());
  if (dst.numel() == 0) {
    return dst;
  }
  host_alias(dst).copy_(host_alias(self), non_blocking);
  return dst;
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  // at::native::resize_ grows the storage through its own allocator (ours) and copies with memcpy.
  return at::native::resize_(self, size, memory_format);
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (on_device(dst)) {
    at::native::resize_(dst, self.sizes(), std::nullopt);
  } else {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

at::Tensor& fill_scalar_(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() > 0) {
    host_alias(self).fill_(value);
  }
  return self;
}

at::Tensor& zero_(at::Tensor& self) {
  if (self.numel() > 0) {
    host_alias(self).zero_();
  }
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return host_alias(self).item();
}

at::Tensor& set_storage_(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                         at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == kDevice, "simulated npu: set_() with a storage on ",
              source.device().str());
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

// Operators that ran on CPU through the fallback, by name ("aten::addmm" or "aten::add.Tensor"), for the run's report.
std::mutex fallback_mutex;
std::map<std::string, int64_t> fallback_calls;

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  {
    const auto& name = op.operator_name();
    std::lock_guard<std::mutex> lock(fallback_mutex);
    ++fallback_calls[name.overload_name.empty() ? name.name : name.name + "." + name.overload_name];
  }
  at::native::cpu_fallback(op, stack);
}

std::map<std::string, int64_t> take_fallback_counts(bool reset) {
  std::lock_guard<std::mutex> lock(fallback_mutex);
  std::map<std::string, int64_t> counts = fallback_calls;
  if (reset) {
    fallback_calls.clear();
  }
  return counts;
}

// A CPU result back on the device of `like` (a copy into device memory).
at::Tensor to_device_of(const at::Tensor& result, const at::Tensor& like) {
  if (!result.defined()) {
    return result;
  }
  at::Tensor out = empty_strided(result.sizes(), result.strides(), result.scalar_type(), std::nullopt,
                                 like.device(), std::nullopt);
  return copy_from(result, out, false);
}

// A tensor's twin on the meta device: its sizes and strides, no data.
at::Tensor meta_twin(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
}

// The memory format torch's fake convolution gives its outputs (torch/_subclasses/fake_impls.py conv: the backend
// _select_conv_backend picks for these tensors, then _conv_determine_backend_memory_format; a 1-d convolution is
// asked as 2-d): what Inductor plans with and a generated wrapper asserts (assert_size_stride) after an extern
// convolution. The CPU kernel may choose another format for the same tensors.
at::MemoryFormat fake_format(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                             at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                             bool transposed, at::IntArrayRef output_padding, int64_t groups,
                             at::OptionalIntArrayRef bias_sizes) {
  std::optional<c10::SymIntArrayRef> sym_bias_sizes;
  if (bias_sizes.has_value()) {
    sym_bias_sizes = c10::fromIntArrayRefSlow(*bias_sizes);
  }
  const at::native::ConvBackend backend = at::native::select_conv_backend(
      input, weight, bias, c10::fromIntArrayRefSlow(stride), c10::fromIntArrayRefSlow(padding),
      c10::fromIntArrayRefSlow(dilation), transposed, c10::fromIntArrayRefSlow(output_padding), c10::SymInt(groups),
      sym_bias_sizes);
  if (weight.dim() == 3) {
    return at::native::_determine_backend_memory_format(input.contiguous().unsqueeze(2), weight.unsqueeze(2),
                                                        backend);
  }
  return at::native::_determine_backend_memory_format(input, weight, backend);
}

// A meta result converted to `format` as the fake convolution converts it (a 3-d tensor through a 4-d view).
at::Tensor in_format(const at::Tensor& meta, at::MemoryFormat format) {
  if (!meta.defined()) {
    return meta;
  }
  if (meta.dim() == 3 && format == at::MemoryFormat::ChannelsLast) {
    return meta.unsqueeze(2).contiguous(format).squeeze(2);
  }
  return meta.contiguous(format);
}

// `result` (computed on the host) on the device of `like`, laid out as `layout` (a meta tensor of its sizes).
at::Tensor to_device_as(const at::Tensor& result, const at::Tensor& layout, const at::Tensor& like) {
  if (!result.defined()) {
    return result;
  }
  at::Tensor out = empty_strided(layout.sizes(), layout.strides(), result.scalar_type(), std::nullopt,
                                 like.device(), std::nullopt);
  host_alias(out).copy_(result);
  return out;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> host_bias;
  std::optional<at::Tensor> meta_bias;
  if (bias.has_value() && bias->defined()) {
    host_bias = host_alias(*bias);
    meta_bias = meta_twin(*bias);
  }
  const at::Tensor result = at::convolution(host_alias(input), host_alias(weight), host_bias, stride, padding,
                                            dilation, transposed, output_padding, groups);
  const at::Tensor meta = at::convolution(meta_twin(input), meta_twin(weight), meta_bias, stride, padding, dilation,
                                          transposed, output_padding, groups);
  const at::MemoryFormat format =
      fake_format(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, std::nullopt);
  return to_device_as(result, in_format(meta, format), input);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  // the bias has one entry per output channel: weight's dim 0, or dim 1 times groups when transposed
  const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> bias_sizes{channels};
  auto [grad_input, grad_weight, grad_bias] =
      at::convolution_backward(host_alias(grad_output), host_alias(input), host_alias(weight),
                               at::OptionalIntArrayRef(bias_sizes), stride, padding, dilation, transposed,
                               output_padding, groups, output_mask);
  auto [input_layout, weight_layout, bias_layout] =
      at::convolution_backward(meta_twin(grad_output), meta_twin(input), meta_twin(weight),
                               at::OptionalIntArrayRef(bias_sizes), stride, padding, dilation, transposed,
                               output_padding, groups, output_mask);
  const at::MemoryFormat format = fake_format(input, weight, std::nullopt, stride, padding, dilation, transposed,
                                              output_padding, groups, at::OptionalIntArrayRef(bias_sizes));
  return {to_device_as(grad_input, in_format(input_layout, format), input),
          to_device_as(grad_weight, in_format(weight_layout, format), input),
          to_device_as(grad_bias, bias_layout, input)};
}

// ------------------------------------------------------------------------------------------------ device guard
// One (default) stream per device; work is synchronous, so every stream/event query is "done". Events record a
// host timestamp so elapsed_time() measures something real.
using Clock = std::chrono::steady_clock;

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kDevice;
  }
  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == kDevice);
    const c10::Device previous(kDevice, current_device_index);
    current_device_index = checked_index(device.index());
    return previous;
  }
  c10::Device getDevice() const override {
    return {kDevice, current_device_index};
  }
  void setDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == kDevice);
    current_device_index = checked_index(device.index());
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < kDeviceCount) {
      current_device_index = device.index();
    }
  }
  c10::Stream getStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kDevice, checked_index(device.index())));
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return getStream(device);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool /*isHighPriority*/) const override {
    return getStream(device);
  }
  c10::Stream getNewStream(c10::Device device, int /*priority*/) const override {
    return getStream(device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    return getStream(stream.device());
  }
  // torch >= 2.10 only (no `override`: absent from older bases).
  virtual void* getStreamNativeHandle(const c10::Stream /*stream*/) const {
    return nullptr;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<Clock::time_point*>(event);
  }
  void record(void** event, const c10::Stream& /*stream*/, const c10::DeviceIndex /*device_index*/,
              const c10::EventFlag /*flag*/) const override {
    if (*event == nullptr) {
      *event = new Clock::time_point(Clock::now());
    } else {
      *static_cast<Clock::time_point*>(*event) = Clock::now();
    }
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return kDeviceCount;
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  // torch >= 2.10 only (no `override`).
  virtual bool isStreamCapturing(const c10::Stream& /*stream*/) const {
    return false;
  }
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override {}
  void recordDataPtrOnStream(const c10::DataPtr& /*data_ptr*/, const c10::Stream& /*stream*/) const override {}
  double elapsedTime(void* event1, void* event2, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(event1 != nullptr && event2 != nullptr, "simulated npu: both events must be recorded first");
    const auto start = *static_cast<Clock::time_point*>(event1);
    const auto end = *static_cast<Clock::time_point*>(event2);
    return std::chrono::duration<double, std::milli>(end - start).count();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

// ------------------------------------------------------------------------------------------------ hooks
// Random numbers: kernels run on CPU through the fallback, so they draw from the CPU default generator; the
// simulated npu reports that same generator as its default, and new generators are CPU generators.
struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return true;
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    checked_index(device_index);
    return at::detail::getDefaultCPUGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    checked_index(device_index);
    return at::detail::createCPUGenerator();
  }
  at::Device getDeviceFromPtr(void* /*data*/) const override {
    return {kDevice, current_device_index};
  }
  bool isPinnedPtr(const void* /*data*/) const override {
    return false;
  }
  at::Allocator* getPinnedMemoryAllocator() const override {
    return c10::GetCPUAllocator();
  }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return true;
  }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override {
    return kDeviceCount;
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    current_device_index = checked_index(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device_index;
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = current_device_index;
    current_device_index = checked_index(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

Hooks hooks;

struct RegisterHooks {
  RegisterHooks() {
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
};
RegisterHooks register_hooks;

int64_t current_raw_stream(int64_t device_index) {
  checked_index(static_cast<c10::DeviceIndex>(device_index));
  return 0;  // the one (default) stream of the simulated device
}

}  // namespace simnpu

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(simnpu::empty_memory_format));
  m.impl("empty_strided", TORCH_FN(simnpu::empty_strided));
  m.impl("_copy_from", TORCH_FN(simnpu::copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(simnpu::copy_from_and_resize));
  m.impl("resize_", TORCH_FN(simnpu::resize_));
  m.impl("fill_.Scalar", TORCH_FN(simnpu::fill_scalar_));
  m.impl("zero_", TORCH_FN(simnpu::zero_));
  m.impl("_local_scalar_dense", TORCH_FN(simnpu::local_scalar_dense));
  // Views must alias: the CPU fallback would return copies.
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("set_.source_Storage", TORCH_FN(at::native::set_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(simnpu::set_storage_));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
  m.impl("convolution_overrideable", TORCH_FN(simnpu::convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(simnpu::convolution_backward_overrideable));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&simnpu::fallback>());
}

// torch.autocast("npu"): the op lists ATen publishes for backends to reuse (CUDA's policy); others pass through.
#define SIMNPU_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define SIMNPU_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(SIMNPU_AUTOCAST_LOWER_PRECISION_FP)
  AT_FORALL_FP32(SIMNPU_AUTOCAST_FP32)
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Simulated NPU device (PrivateUse1 backed by host memory) for npu_inductor_compat";
  m.def("current_raw_stream", &simnpu::current_raw_stream, pybind11::arg("device_index"),
        "Raw stream handle of the device's current stream (always 0: one synchronous stream)");
  m.def("memory_allocated", []() { return simnpu::live_bytes.load(); }, "Bytes held by live simulated-npu tensors");
  m.def("max_memory_allocated", []() { return simnpu::peak_bytes.load(); }, "Peak of memory_allocated()");
  m.def(
      "block_of",
      [](uintptr_t address) -> std::optional<std::pair<uintptr_t, int64_t>> {
        std::lock_guard<std::mutex> lock(simnpu::live_mutex);
        for (const auto& [ptr, size] : simnpu::live_blocks) {
          const auto begin = reinterpret_cast<uintptr_t>(ptr);
          if (address >= begin && address < begin + size) return std::make_pair(begin, static_cast<int64_t>(size));
        }
        return std::nullopt;
      },
      pybind11::arg("address"), "(start, bytes) of the live simulated-npu block holding `address`, or None");
  m.def("fallback_counts", &simnpu::take_fallback_counts, pybind11::arg("reset") = false,
        "Calls per operator that ran on CPU through the fallback since the last reset");
  m.def("device_count", []() { return static_cast<int64_t>(simnpu::kDeviceCount); });
  m.def("current_device", []() { return static_cast<int64_t>(simnpu::current_device_index); },
        "This thread's current simulated npu device");
  m.def("set_device", [](int64_t index) { simnpu::current_device_index = simnpu::checked_index(index); },
        "Make `index` this thread's current simulated npu device");
}
