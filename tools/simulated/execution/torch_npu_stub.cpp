// Stub libtorch_npu.so (for codegen --execute and the tests): the torch_npu symbols the NPU C++ wrapper links
// against, over the emulated ACL runtime (libascendcl.so from emulated_acl.cpp), compiled against torch's and the
// real torch_npu headers.
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
// The current stream is per host thread and device, the default one unless selected (NPUStream.cpp: thread-local
// current_streams, setCurrentNPUStream); aoti_torch_get_current_npu_stream (torch_npu's C shim) returns it. Device
// memory comes from aclrtMallocAlign32, as NPUWorkspaceAllocator.cpp asks it (c10_npu::acl::AclrtMallocAlign32).
//
// The task queue (at_npu::native::OpCommand::RunOpApiV2) follows torch_npu's framework/OpCommand.cpp (RunOpApiV2:
// queued unless the task queue is off, else run inline on the calling thread), core/npu/NPUQueue.cpp (Repository: a
// ring of kQueueCapacity = 4096 entries whose producer waits when it is full; one consumer thread per repository that
// first sets its device (StartConsume) and runs the entries in order; MakeSureQueueEmpty waits until every entry ran; a
// failing entry puts the repository in its error state, and the next enqueue or drain throws torch_npu's text naming
// the operator, with ACL's recent message; an entry's exception is logged, not raised: framework/OpParamMaker.cpp
// ExecFuncOpApi) and core/npu/NPUStream.cpp (without PER_STREAM_QUEUE every enqueue of a device goes to its default
// stream's repository). TASK_QUEUE_ENABLE is read once as core/npu/register/OptionsManager.cpp reads it: unset is 1,
// only 0, 1 and 2 are valid, ASCEND_LAUNCH_BLOCKING makes it 0; 1 and 2 differ only in how the consumer polls and in
// what op-plugin's own ops put into the queued work, so both queue here. Drain points modelled: the C shim's stream
// getter (inductor/aoti_torch/shim_npu.cpp: getCurrentNPUStream(idx).stream(), which empties the queue) and
// emulated_torch_npu_synchronize_device (npuSynchronizeDevice in NPUStream.cpp: every queue emptied, then the device
// synchronised). aoti_torch_npu_mm_out is a torch_npu op as op-plugin issues it (EXEC_NPU_CMD: the launch of aclnnMm is
// queued work on the current stream); here that queued work puts a host function computing the product on the stream
// (aclrtLaunchCallback), so the product reads its inputs when the stream gets there, as a kernel would; the stream is
// the issuing thread's current one when the op is issued (op_api_common.h, EXEC_NPU_CMD: getCurrentNPUStream() is read
// before the work is queued). Its workspace is taken as op-plugin's op_plugin/utils/op_api_common.h takes it: at
// TASK_QUEUE_ENABLE=2 (EXEC_NPU_CMD_V2) inside the queued work, from the workspace allocator
// (unsafe_empty_workspace(size, stream) -> allocate_workspace's per-stream block); at 0 and 1 (EXEC_NPU_CMD_V1) on the
// calling thread, from the caching allocator (unsafe_empty_workspace(size)), modelled as device memory of its own that
// is never given back. The size aclnnMmGetWorkspaceSize answers is this emulation's (kMmWorkspace); the product checks
// its workspace is still allocated when the stream runs it.
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h>
#include <torch_npu/csrc/framework/OpCommand.h>
#include <torch_npu/csrc/framework/utils/OpPreparation.h>

#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

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
    // a failed allocation leaves the new size and no memory: a later request no larger fails too, until the
    // blocks are emptied (NPUWorkspaceAllocator.cpp malloc returns nullptr; empty_cache deletes the block)
    block.size = kRoundLarge * ((wanted + kRoundLarge - 1) / kRoundLarge);
    if (aclrtMallocAlign32(&block.data, block.size, ACL_MEM_MALLOC_HUGE_ONLY) != ACL_SUCCESS) block.data = nullptr;
  }
  return block.data;
}

// As format_size (NPUCachingAllocator.cpp) words it: bytes, KiB, MiB or GiB with two decimals.
std::string size_text(uint64_t size) {
  char text[64];
  if (size <= 1024) {
    std::snprintf(text, sizeof(text), "%llu bytes", static_cast<unsigned long long>(size));
  } else {
    const char* unit = size <= 1048576 ? "KiB" : size <= 1073741824ULL ? "MiB" : "GiB";
    const double scale = size <= 1048576 ? 1024.0 : size <= 1073741824ULL ? 1048576.0 : 1073741824.0;
    std::snprintf(text, sizeof(text), "%.2f %s", static_cast<double>(size) / scale, unit);
  }
  return text;
}

void keep(void*) {}  // the deleter frees nothing: the block stays the stream's

// The tests' forced interleavings (nothing real has them): one party is paused at a chosen point until another's
// step has come in between, or a bound has passed, so a launch that keeps the other out only loses the bound.
//  - gate_mm: the product's queued work (TASK_QUEUE_ENABLE=2), once it has taken its workspace, waits until the test
//    disarms the gate; a workspace request from a thread that is no queue's consumer first waits until it has;
//  - pause_next_workspace: the next workspace request, once served, waits until another request has been served.
struct Gates {
  std::mutex lock;
  std::condition_variable changed;
  bool mm_armed = false;
  bool mm_took = false;
  bool pause_next = false;
  bool paused = false;
  uint64_t served = 0;
};

Gates& gates() {
  static auto* instance = new Gates();
  return *instance;
}

constexpr auto kGateBound = std::chrono::seconds(2);
thread_local bool consumer_thread = false;

void before_workspace_request() {
  Gates& g = gates();
  std::unique_lock<std::mutex> hold(g.lock);
  if (g.mm_armed && !consumer_thread) g.changed.wait_for(hold, kGateBound, [&] { return g.mm_took; });
}

void after_workspace_request() {
  Gates& g = gates();
  std::unique_lock<std::mutex> hold(g.lock);
  g.served += 1;
  g.changed.notify_all();
  if (!g.pause_next) return;
  g.pause_next = false;
  g.paused = true;
  const uint64_t mine = g.served;
  g.changed.wait_for(hold, kGateBound, [&] { return g.served > mine; });
  g.paused = false;
}

// torch_npu's caches emptied (torch_npu_caching_stub.cpp): counts as a served request for a paused one.
void cache_emptied() {
  Gates& g = gates();
  std::lock_guard<std::mutex> hold(g.lock);
  g.served += 1;
  g.changed.notify_all();
}

void mm_took_workspace() {
  Gates& g = gates();
  std::unique_lock<std::mutex> hold(g.lock);
  if (!g.mm_armed) return;
  g.mm_took = true;
  g.changed.notify_all();
  g.changed.wait_for(hold, std::chrono::seconds(30), [&] { return !g.mm_armed; });
}

struct RegisterDeviceSource {
  RegisterDeviceSource() { emulated_acl_set_device_source(&current_device); }
} register_device_source;

thread_local std::map<int32_t, int32_t> current_stream_index;  // device -> the selected stream (absent: default)

aclrtStream current_stream(int32_t device) {
  const auto found = current_stream_index.find(device);
  return emulated_acl_stream_at(device, found == current_stream_index.end() ? 0 : found->second);
}

void set_current_device(int32_t device) {
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  guard->setDevice(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
}

// OptionsManager::CheckBlockingEnable: ASCEND_LAUNCH_BLOCKING, read once as GetBoolTypeOption reads it (strtol, any
// non-zero value is on: "0" and unset are off).
bool launch_blocking() {
  static const bool on = [] {
    const char* blocking = std::getenv("ASCEND_LAUNCH_BLOCKING");
    return blocking != nullptr && std::strtol(blocking, nullptr, 10) != 0;
  }();
  return on;
}

// OptionsManager::GetTaskQueueEnable: read once; unset means 1; ASCEND_LAUNCH_BLOCKING wins when it is on.
int64_t task_queue_enable() {
  static const int64_t level = [] {
    if (launch_blocking()) return int64_t{0};
    const char* text = std::getenv("TASK_QUEUE_ENABLE");
    const int64_t value = text == nullptr ? 1 : std::strtol(text, nullptr, 10);
    if (value < 0 || value > 2) throw std::runtime_error("TASK_QUEUE_ENABLE should be 0, 1 or 2");
    return value;
  }();
  return level;
}

constexpr size_t kQueueCapacity = 4096;  // NPUQueue.cpp

// PTA_ERROR(ErrCode::ACL) / OPS_ERROR(ErrCode::ACL) as core/npu/NPUException.cpp formats them (the time, process and
// rank of its header left out).
const char* const kPtaAclError = "\n[ERROR] (emulated torch_npu) ERR00100 PTA call acl api failed";
const char* const kOpsAclError = "\n[ERROR] (emulated torch_npu) ERR01100 OPS call acl api failed";

// The error a failed queue entry raises at the next enqueue or drain, as NPUQueue.cpp words it (Repository::Enqueue,
// MakeSureQueueEmpty: get_func_error_msg's operator name, then ACL's recent error message, read where it failed).
std::string queue_error(const std::string& name, const char* acl_message) {
  return "The Inner error is reported as above. The process exits for this inner error, and the current working "
         "operator name is " + name + ".\nSince the operator is called asynchronously, the stacktrace may be "
         "inaccurate. If you want to get the accurate stacktrace, please set the environment variable "
         "ASCEND_LAUNCH_BLOCKING=1.\nNote: ASCEND_LAUNCH_BLOCKING=1 will force ops to run in synchronous mode, "
         "resulting in performance degradation. Please unset ASCEND_LAUNCH_BLOCKING in time after debugging." +
         std::string(kPtaAclError) + ".\n" + (acl_message ? acl_message : "");
}

struct Entry {
  std::string name;
  std::function<int()> work;
  uint64_t issued;  // its place in the host's program order (the emulated ACL's dataflow check reads it)
};

class Repository {
 public:
  explicit Repository(int32_t device) : device_(device), consumer_([this] { consume(); }) { consumer_.detach(); }

  void enqueue(const std::string& name, const std::function<int()>& work) {
    std::unique_lock<std::mutex> hold(lock_);
    throw_if_failed(hold);
    changed_.wait(hold, [this] { return entries_.size() < kQueueCapacity || !error_.empty(); });
    throw_if_failed(hold);
    entries_.push_back({name, work, emulated_acl_issue()});
    changed_.notify_all();
  }

  // MakeSureQueueEmpty: everything queued so far has run (a held consumer runs it, then is held again).
  void drain() {
    std::unique_lock<std::mutex> hold(lock_);
    draining_ += 1;
    changed_.notify_all();
    changed_.wait(hold, [this] { return (entries_.empty() && !running_) || !error_.empty(); });
    draining_ -= 1;
    throw_if_failed(hold);
  }

  void hold(bool held) {
    std::lock_guard<std::mutex> guard(lock_);
    held_ = held;
    changed_.notify_all();
  }

 private:
  void consume() {
    set_current_device(device_);  // StartConsume: c10_npu::SetDevice(device_id)
    consumer_thread = true;
    std::unique_lock<std::mutex> hold(lock_);
    for (;;) {
      changed_.wait(hold, [this] { return !entries_.empty() && (!held_ || draining_ > 0); });
      Entry entry = std::move(entries_.front());
      entries_.pop_front();
      running_ = true;
      hold.unlock();
      int status = 0;
      emulated_acl_set_issuing(entry.issued);
      try {
        status = entry.work();
      } catch (const std::exception& err) {  // ExecFuncOpApi: the text is logged, never raised
        status = ACL_ERROR_INVALID_PARAM;
        std::cerr << "E torch_npu OpParamMaker.cpp] " << err.what() << std::endl;  // LOG(ERROR) << e.what()
      }
      emulated_acl_set_issuing(0);
      const char* acl_message = status != 0 ? aclGetRecentErrMsg() : nullptr;  // on the consumer thread
      hold.lock();
      running_ = false;
      if (status != 0 && error_.empty()) {  // CheckDeviceError: ERROR_EXIT, the rest of the queue is dropped
        error_ = queue_error(entry.name, acl_message);
        entries_.clear();
      }
      changed_.notify_all();
    }
  }

  void throw_if_failed(std::unique_lock<std::mutex>&) const {
    if (!error_.empty()) throw std::runtime_error(error_);
  }

  int32_t device_;
  std::mutex lock_;
  std::condition_variable changed_;
  std::deque<Entry> entries_;
  bool running_ = false;
  bool held_ = false;  // the test's hold: a consumer thread that is not scheduled until a drain needs it
  int draining_ = 0;
  std::string error_;
  std::thread consumer_;
};

std::mutex repositories_lock;
std::map<int32_t, Repository*>& repositories() {
  static auto* instance = new std::map<int32_t, Repository*>();  // never destroyed: consumers outlive main
  return *instance;
}

Repository& repository(int32_t device) {
  std::lock_guard<std::mutex> hold(repositories_lock);
  Repository*& found = repositories()[device];
  if (found == nullptr) found = new Repository(device);
  return *found;
}

void drain_all() {
  std::vector<Repository*> all;
  {
    std::lock_guard<std::mutex> hold(repositories_lock);
    for (auto& [device, found] : repositories()) all.push_back(found);
  }
  for (Repository* found : all) found->drain();
}

// A tensor's memory as the host sees it (device memory is host memory here), and a C-shim handle's tensor.
at::Tensor on_host(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

at::Tensor handle_tensor(AtenTensorHandle handle) { return *reinterpret_cast<at::Tensor*>(handle); }

struct MmArgs {
  at::Tensor out, self, mat2;
  void* workspace = nullptr;
};

constexpr uint64_t kMmWorkspace = 65536;  // aclnnMmGetWorkspaceSize's answer here (the emulation's choice)

void mm_on_stream(void* data) {
  std::unique_ptr<MmArgs> args(static_cast<MmArgs*>(data));
  emulated_acl_uses(args->workspace, "aclnnMm's workspace");
  // the stream has reached the product: read the inputs' memory now (host memory underneath)
  at::Tensor product = on_host(args->out);
  at::mm_out(product, on_host(args->self), on_host(args->mat2));
  emulated_acl_written(args->out.data_ptr());
}

}  // namespace

namespace at_npu {
namespace native {

at::Tensor allocate_workspace(uint64_t workspace_size, aclrtStream stream) {
  before_workspace_request();
  void* data = workspace_size == 0 ? nullptr : workspace_block(workspace_size, stream);
  after_workspace_request();
  if (workspace_size != 0 && data == nullptr) {  // NpuWorkspaceAllocator::malloc: no retry, no cache freed
    TORCH_CHECK_WITH(OutOfMemoryError, false, "NPU out of memory. NPUWorkspaceAllocator tried to allocate ",
                     size_text(workspace_size), "(NPU ", current_device(), "). If you want to reduce memory usage, ",
                     "take a try to set the environment variable TASK_QUEUE_ENABLE=1.");
  }
  // the uint8 tensor OpPreparation.cpp returns: no elements, the memory its storage's
  const c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(current_device()));
  c10::Storage storage(c10::Storage::use_byte_size_t(), workspace_size, c10::DataPtr(data, data, &keep, device),
                       nullptr, false);
  return at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                  c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                  caffe2::TypeMeta::Make<uint8_t>());
}

void OpCommand::RunOpApiV2(const string& op_name, const PROC_FUNC& func, bool sync) {
  const int32_t device = current_device();
  if (task_queue_enable() != 0) {
    repository(device).enqueue(op_name, func);
  } else {
    // OpParamMaker.cpp InnerRunOpApi: inline, on the calling thread; an exception passes through unchanged, a
    // non-zero return is OPS_CHECK_ERROR's error (NPUException.h), naming the operator and ACL's recent message
    const int status = func();
    if (status != 0) {
      const char* acl_message = aclGetRecentErrMsg();
      throw std::runtime_error(" OPS function error: " + op_name + ", error code is " + std::to_string(status) +
                               kOpsAclError + "\n" + (acl_message ? acl_message : ""));
    }
    // ASCEND_LAUNCH_BLOCKING: the stream synchronised after each op (torch_npu skips it under capture, which the
    // emulated runs never combine with blocking launches)
    if (launch_blocking() && aclrtSynchronizeStream(current_stream(device)) != ACL_SUCCESS) {
      throw std::runtime_error(op_name + ": sync failed");
    }
  }
  if (sync) {
    repository(device).drain();
    if (aclrtSynchronizeStream(current_stream(device)) != ACL_SUCCESS) throw std::runtime_error(op_name + ": sync failed");
  }
}

}  // namespace native
}  // namespace at_npu

extern "C" AOTITorchError aoti_torch_get_current_npu_stream(int32_t device_index, void** ret_stream) {
  const int32_t device = device_index < 0 ? current_device() : device_index;
  try {
    if (task_queue_enable() != 0) repository(device).drain();
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
  *ret_stream = current_stream(device);
  return AOTI_TORCH_SUCCESS;
}

#ifdef EMULATED_TORCH_NPU_SHIM_mm_out
extern "C" AOTITorchError aoti_torch_npu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  auto* args = new MmArgs{handle_tensor(out), handle_tensor(self), handle_tensor(mat2)};
  aclrtStream stream = current_stream(current_device());
  emulated_acl_expect_write(args->out.data_ptr(), args->out.nbytes(), "aclnnMm");
  const bool in_queued_work = task_queue_enable() == 2;  // EXEC_NPU_CMD_V2; else V1, on the calling thread
  try {
    if (!in_queued_work && aclrtMalloc(&args->workspace, kMmWorkspace, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      delete args;  // (the caching allocator's memory: the op's own, never another's)
      return AOTI_TORCH_FAILURE;
    }
    at_npu::native::OpCommand::RunOpApiV2("aclnnMm", [args, stream, in_queued_work]() -> int {
      at::Tensor workspace;
      if (in_queued_work) {
        workspace = at_npu::native::allocate_workspace(kMmWorkspace, stream);
        args->workspace = const_cast<void*>(workspace.storage().data());
        mm_took_workspace();
      }
      return static_cast<int>(aclrtLaunchCallback(&mm_on_stream, args, ACL_CALLBACK_BLOCK, stream));
    });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
  return AOTI_TORCH_SUCCESS;
}
#endif

// Other torch_npu ops a wrapper calls through the C shim (signatures: the wheel's
// inductor/aoti_torch/generated/c_shim_npu.h), issued as op-plugin issues any op (EXEC_NPU_CMD: queued work on the
// issuing thread's current stream) and, like the product above, computed by a host function on the stream with
// ATen's CPU kernel on the memory underneath, so each reads its inputs when the stream gets there. Their workspace is
// not modelled (the product's is). Those GPT-2's wrappers call on the three core lines are here; the other functions
// of c_shim_npu.h whose signature torch's CPU shim shares are generated (shim_forwarding.py, torch_npu_forward.cpp);
// a shim function in neither fails to link, naming itself. Each is defined only where the paired wheel's c_shim_npu.h
// declares it (EMULATED_TORCH_NPU_SHIM_<op>, from emulated_runtime.py): 2.12.0.post3 has no embedding, for one.
namespace {

struct OpArgs {
  const char* name;
  std::function<void()> compute;
  std::vector<void*> written;
};

void op_on_stream(void* data) {
  std::unique_ptr<OpArgs> args(static_cast<OpArgs*>(data));
  args->compute();
  for (void* address : args->written) emulated_acl_written(address);
}

AOTITorchError issue_op(const char* name, const std::vector<at::Tensor>& outs, std::function<void()> compute) {
  auto* args = new OpArgs{name, std::move(compute), {}};
  for (const at::Tensor& out : outs) {
    emulated_acl_expect_write(out.data_ptr(), out.nbytes(), name);
    args->written.push_back(out.data_ptr());
  }
  aclrtStream stream = current_stream(current_device());
  try {
    at_npu::native::OpCommand::RunOpApiV2(name, [args, stream]() -> int {
      return static_cast<int>(aclrtLaunchCallback(&op_on_stream, args, ACL_CALLBACK_BLOCK, stream));
    });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
  return AOTI_TORCH_SUCCESS;
}

}  // namespace

#ifdef EMULATED_TORCH_NPU_SHIM_bmm_out
extern "C" AOTITorchError aoti_torch_npu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  at::Tensor o = handle_tensor(out), a = handle_tensor(self), b = handle_tensor(mat2);
  return issue_op("aclnnBatchMatMul", {o}, [o, a, b]() {
    at::Tensor result = on_host(o);
    at::bmm_out(result, on_host(a), on_host(b));
  });
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_addmm_out
extern "C" AOTITorchError aoti_torch_npu_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                                   AtenTensorHandle mat2, double beta, double alpha) {
  at::Tensor o = handle_tensor(out), s = handle_tensor(self), a = handle_tensor(mat1), b = handle_tensor(mat2);
  return issue_op("aclnnAddmm", {o}, [o, s, a, b, beta, alpha]() {
    at::Tensor result = on_host(o);
    at::addmm_out(result, on_host(s), on_host(a), on_host(b), beta, alpha);
  });
}
#endif

namespace {

// A functional op's outputs, allocated when it is issued (on the device of ``on``, laid out as its meta kernel lays
// them out) and handed to the wrapper as new handles; their values are computed on the stream.
at::Tensor meta_of(const at::Tensor& t) { return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)); }

at::Tensor allocated_like(const at::Tensor& meta, const at::Tensor& on) {
  return at::empty_strided(meta.sizes(), meta.strides(), meta.options().device(on.device()));
}

AtenTensorHandle new_handle(const at::Tensor& t) { return reinterpret_cast<AtenTensorHandle>(new at::Tensor(t)); }

std::optional<at::Tensor> optional_tensor(AtenTensorHandle* handle) {
  if (handle == nullptr || *handle == nullptr) return std::nullopt;
  return handle_tensor(*handle);
}

std::optional<at::Tensor> host_or_meta(const std::optional<at::Tensor>& t, bool meta) {
  if (!t) return std::nullopt;
  return meta ? meta_of(*t) : on_host(*t);
}

at::Tensor as(const at::Tensor& t, bool meta) { return meta ? meta_of(t) : on_host(t); }

// A functional op of one output: ``op(meta)`` computes it from its inputs' meta tensors (to lay the output out) or
// from their host memory (on the stream).
template <typename Op>
AOTITorchError functional(const char* name, const at::Tensor& on, AtenTensorHandle* ret0, Op op) {
  try {
    at::Tensor out = allocated_like(op(true), on);
    *ret0 = new_handle(out);
    return issue_op(name, {out}, [out, op]() { on_host(out).copy_(op(false)); });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
}

}  // namespace

#ifdef EMULATED_TORCH_NPU_SHIM_embedding
extern "C" AOTITorchError aoti_torch_npu_embedding(AtenTensorHandle weight, AtenTensorHandle indices,
                                                  int64_t padding_idx, int32_t scale_grad_by_freq, int32_t sparse,
                                                  AtenTensorHandle* ret0) {
  at::Tensor w = handle_tensor(weight), i = handle_tensor(indices);
  return functional("aclnnEmbedding", w, ret0, [=](bool meta) {
    return at::embedding(as(w, meta), as(i, meta), padding_idx, scale_grad_by_freq != 0, sparse != 0);
  });
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_constant_pad_nd
extern "C" AOTITorchError aoti_torch_npu_constant_pad_nd(AtenTensorHandle self, const int64_t* pad, int64_t pad_len_,
                                                        double value, AtenTensorHandle* ret0) {
  at::Tensor s = handle_tensor(self);
  std::vector<int64_t> pads(pad, pad + pad_len_);
  return functional("aclnnConstantPadNd", s, ret0, [=](bool meta) { return at::constant_pad_nd(as(s, meta), pads, value); });
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM__log_softmax_backward_data
extern "C" AOTITorchError aoti_torch_npu__log_softmax_backward_data(AtenTensorHandle grad_output,
                                                                   AtenTensorHandle output, int64_t dim,
                                                                   int32_t input_dtype, AtenTensorHandle* ret0) {
  at::Tensor g = handle_tensor(grad_output), o = handle_tensor(output);
  const auto dtype = static_cast<c10::ScalarType>(input_dtype);  // the C shim passes dtypes as their ScalarType
  return functional("aclnnLogSoftmaxBackward", g, ret0, [=](bool meta) {
    return at::_log_softmax_backward_data(as(g, meta), as(o, meta), dim, dtype);
  });
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_any_dim
extern "C" AOTITorchError aoti_torch_npu_any_dim(AtenTensorHandle self, int64_t dim, int32_t keepdim,
                                                AtenTensorHandle* ret0) {
  try {
    at::Tensor s = handle_tensor(self);
    at::Tensor out = allocated_like(at::any(meta_of(s), dim, keepdim != 0), s);
    *ret0 = new_handle(out);
    return issue_op("aclnnAny", {out}, [out, s, dim, keepdim]() { on_host(out).copy_(at::any(on_host(s), dim, keepdim != 0)); });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_cat
extern "C" AOTITorchError aoti_torch_npu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
                                            AtenTensorHandle* ret0) {
  try {
    std::vector<at::Tensor> inputs, metas;
    for (int64_t i = 0; i < tensors_len_; ++i) inputs.push_back(handle_tensor(tensors[i]));
    for (const at::Tensor& input : inputs) metas.push_back(meta_of(input));
    at::Tensor out = allocated_like(at::cat(metas, dim), inputs.at(0));
    *ret0 = new_handle(out);
    return issue_op("aclnnCat", {out}, [out, inputs, dim]() {
      std::vector<at::Tensor> hosts;
      for (const at::Tensor& input : inputs) hosts.push_back(on_host(input));
      on_host(out).copy_(at::cat(hosts, dim));
    });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_nll_loss_forward
extern "C" AOTITorchError aoti_torch_npu_nll_loss_forward(AtenTensorHandle self, AtenTensorHandle target,
                                                         AtenTensorHandle* weight, int64_t reduction,
                                                         int64_t ignore_index, AtenTensorHandle* ret0,
                                                         AtenTensorHandle* ret1) {
  try {
    at::Tensor s = handle_tensor(self), t = handle_tensor(target);
    std::optional<at::Tensor> w = optional_tensor(weight);
    auto metas = at::nll_loss_forward(meta_of(s), meta_of(t), host_or_meta(w, true), reduction, ignore_index);
    at::Tensor out = allocated_like(std::get<0>(metas), s), total = allocated_like(std::get<1>(metas), s);
    *ret0 = new_handle(out);
    *ret1 = new_handle(total);
    return issue_op("aclnnNLLLoss", {out, total}, [out, total, s, t, w, reduction, ignore_index]() {
      auto found = at::nll_loss_forward(on_host(s), on_host(t), host_or_meta(w, false), reduction, ignore_index);
      on_host(out).copy_(std::get<0>(found));
      on_host(total).copy_(std::get<1>(found));
    });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_nll_loss_backward
extern "C" AOTITorchError aoti_torch_npu_nll_loss_backward(AtenTensorHandle grad_output, AtenTensorHandle self,
                                                          AtenTensorHandle target, AtenTensorHandle* weight,
                                                          int64_t reduction, int64_t ignore_index,
                                                          AtenTensorHandle total_weight, AtenTensorHandle* ret0) {
  try {
    at::Tensor g = handle_tensor(grad_output), s = handle_tensor(self), t = handle_tensor(target);
    at::Tensor total = handle_tensor(total_weight);
    std::optional<at::Tensor> w = optional_tensor(weight);
    at::Tensor meta = at::nll_loss_backward(meta_of(g), meta_of(s), meta_of(t), host_or_meta(w, true), reduction,
                                            ignore_index, meta_of(total));
    at::Tensor out = allocated_like(meta, s);
    *ret0 = new_handle(out);
    return issue_op("aclnnNLLLossBackward", {out}, [out, g, s, t, w, total, reduction, ignore_index]() {
      on_host(out).copy_(at::nll_loss_backward(on_host(g), on_host(s), on_host(t), host_or_meta(w, false), reduction,
                                               ignore_index, on_host(total)));
    });
  } catch (const std::exception&) {
    return AOTI_TORCH_FAILURE;
  }
}
#endif

#ifdef EMULATED_TORCH_NPU_SHIM_randint_low_out
extern "C" AOTITorchError aoti_torch_npu_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
                                                         const int64_t* size, int64_t size_len_) {
  at::Tensor o = handle_tensor(out);
  std::vector<int64_t> sizes(size, size + size_len_);
  return issue_op("aclnnInplaceRandom", {o}, [o, low, high, sizes]() {
    at::Tensor result = on_host(o);
    at::randint_out(result, low, high, sizes);
  });
}
#endif

// The test's side: npuSynchronizeDevice (every queue emptied, then the device), its error, and a consumer that is not
// scheduled.
std::string last_error;

extern "C" int emulated_torch_npu_synchronize_device(void) {
  try {
    drain_all();
  } catch (const std::exception& err) {
    last_error = err.what();
    return 1;
  }
  emulated_acl_synchronize_all();
  return 0;
}

extern "C" const char* emulated_torch_npu_last_error(void) { return last_error.c_str(); }

extern "C" void emulated_torch_npu_hold_queue(int32_t device, int held) { repository(device).hold(held != 0); }

// torch.npu.set_stream on the calling thread: stream `index` of `device` (0: its default stream).
extern "C" void emulated_torch_npu_set_stream(int32_t device, int32_t index) { current_stream_index[device] = index; }

// getCurrentNPUStream().stream(false): this thread's current stream of the current device, the queue left as it is
// (torch_npu_capture_stub.cpp asks it).
extern "C" void* emulated_torch_npu_current_stream(void) { return current_stream(current_device()); }

// The forced interleavings (see Gates).
extern "C" void emulated_torch_npu_gate_mm(int armed) {
  Gates& g = gates();
  std::lock_guard<std::mutex> hold(g.lock);
  g.mm_armed = armed != 0;
  g.mm_took = false;
  g.changed.notify_all();
}

extern "C" void emulated_torch_npu_pause_next_workspace(void) {
  Gates& g = gates();
  std::lock_guard<std::mutex> hold(g.lock);
  g.pause_next = true;
}

extern "C" int emulated_torch_npu_workspace_paused(void) {
  Gates& g = gates();
  std::lock_guard<std::mutex> hold(g.lock);
  return g.paused ? 1 : 0;
}
