// Emulated ACL runtime (for codegen --execute and the tests), built as libascendcl.so. It is compiled against the
// REAL ACL headers that torch_npu's wheel ships (torch_npu/include/acl), so every function here has the real
// signature, and the NPU C++ wrapper Inductor generates links and runs against it unchanged.
//
// Device memory is host memory. Each device has streams (index 0 is its default; a test selects others, as a user
// selects a stream); work queued on a stream runs, in order, when the stream or its device is synchronised. What it
// models, from the real components:
//  - launches: at most 65535 blocks (triton-ascend docs/en/migration_guide/migrate_from_gpu.md: "coreDim ... can't
//    be greater than UINT16_MAX"), else ACL_ERROR_RT_PARAM_INVALID; work for a stream of another device than the
//    current one is refused with ACL_ERROR_RT_STREAM_CONTEXT (acl error_codes/rt_error_codes.h: "stream not in
//    current context");
//  - aclrtSynchronizeDevice runs the current device's queued work (torch_npu's workspace allocator calls it before
//    freeing a block it grows: NPUWorkspaceAllocator.cpp);
//  - aclrtFree'd device memory is never handed out again here (it is poisoned and kept), so a launch whose argument
//    points into freed memory is seen as such when it runs (pinned host memory is released: aclrtFreeHost checks
//    that no queued copy still reads it);
//  - a call the test makes fail returns EMULATED_ACL_INJECTED_ERROR and leaves its text for aclGetRecentErrMsg, on
//    the calling thread, read once (torch_npu appends it to its queue's and OPS_CHECK_ERROR's errors);
//  - a device holds at most the memory a test sets (emulated_acl_set_memory_limit): past it aclrtMalloc and
//    aclrtMallocAlign32 fail as CANN's do (ACL_ERROR_RT_MEMORY_ALLOCATION, an "EL0004" recent error message);
//  - aclrtGetDeviceInfo answers ACL_DEV_ATTR_AICORE_CORE_NUM / ACL_DEV_ATTR_VECTOR_CORE_NUM per device, aclrtGetSocName
//    the SoC a test names;
//  - aclgraph capture, its modes' refusals and events: emulated_acl_capture.cpp (absent, as from a CANN before aclgraph
//    capture, when built with EMULATED_ACL_WITHOUT_CAPTURE);
//  - device memory as ACL hands it out (acl_rt.h and CANN's API reference for aclrtMalloc / aclrtMallocAlign32): the
//    start 64-byte aligned (and here no more: 64 bytes past a 128-byte boundary), the size rounded up to 32 bytes,
//    plus 32 for aclrtMalloc; a launch argument pointing into device memory off a 64-byte boundary is flagged, since
//    ACL asks every segment carved from an allocation to start on one.
// It records every call, every allocation and every launch as it runs (kernel, device, stream, blockDim, launch
// attributes, the argument bytes, the device memory each argument word points into and the bytes there before the
// kernel ran); a launched kernel then dirties the device memory its arguments point into (64 KiB from each), as a
// real one may, unless the test set a kernel runner (emulated_acl_set_kernel_runner): then the runner executes it.
// Hazards it flags: a launch (or a torch_npu op's host function, emulated_acl_uses) reading freed memory, a blocking
// aclrtMemcpy into memory that queued work still uses, a host buffer changed or freed before the aclrtMemcpyAsync
// that reads it ran.
#include "emulated_acl_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace emulated_acl_internal __attribute__((visibility("hidden"))) {

State& state() {
  static State* instance = new State();  // never destroyed: the wrapper may call in during interpreter shutdown
  return *instance;
}

// aclGetRecentErrMsg's text: the calling thread's last failure, kept until it is read (CANN's error manager keeps
// one per thread; torch_npu reads it on the thread where the call failed: NPUQueue.cpp, c10_npu_get_error_message).
thread_local std::string recent_error;

aclError enter(const char* function) {
  State& s = state();
  s.calls[function] += 1;
  if (s.fail != function) return ACL_SUCCESS;
  recent_error = std::string("EE9999: Inner Error!\nEE9999: [emulated ACL] ") + function + " failed with error " +
                 std::to_string(EMULATED_ACL_INJECTED_ERROR) + " (injected by the test)[FUNC:" + function + "]";
  return EMULATED_ACL_INJECTED_ERROR;
}

int32_t current_device() {
  State& s = state();
  return s.device_source ? s.device_source() : s.own_device;
}

Stream* stream_of(aclrtStream stream) {
  for (auto& [key, candidate] : state().streams) {
    if (static_cast<void*>(&candidate) == stream) return &candidate;
  }
  return nullptr;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string hex(const unsigned char* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

Region* region_at(uintptr_t address) {
  State& s = state();
  auto found = s.regions.upper_bound(address);
  if (found == s.regions.begin()) return nullptr;
  --found;
  Region& region = found->second;
  return address < region.begin + region.size ? &region : nullptr;
}

Region& add_region(void* block, uint64_t size, const std::string& label, int32_t device) {
  State& s = state();
  const auto begin = reinterpret_cast<uintptr_t>(block);
  Region& region = s.regions[begin];
  region = Region{begin, size, label, s.next_region++, device, false};
  s.allocations.push_back("{\"id\":" + std::to_string(region.id) + ",\"label\":" + quoted(label) +
                          ",\"size\":" + std::to_string(size) + ",\"ptr\":" + std::to_string(begin) +
                          ",\"device\":" + std::to_string(device) + "}");
  return region;
}

// The device regions an op writes or a launch may touch (argument words pointing into a region).
std::vector<Region*> touched(const Op& op) {
  std::vector<Region*> out;
  if (op.kind == "launch") {
    for (size_t offset = 0; offset + 8 <= op.args.size(); offset += 8) {
      uintptr_t word = 0;
      std::memcpy(&word, op.args.data() + offset, 8);
      if (Region* region = region_at(word)) out.push_back(region);
    }
  } else if (Region* region = region_at(reinterpret_cast<uintptr_t>(op.dst))) {
    out.push_back(region);
  }
  return out;
}

void run(Op& op) {
  State& s = state();
  if (op.kind == "record") {
    op.event->pending -= 1;
    return;
  }
  if (op.kind == "callback") {  // acl_rt.h aclrtLaunchCallback: the host function, in stream order
    if (s.record_launches) s.order.push_back("callback on " + op.where);
    op.callback(op.user_data);
    return;
  }
  if (op.kind == "memset" || op.kind == "copy") {
    Region* target = region_at(reinterpret_cast<uintptr_t>(op.dst));
    if (target != nullptr && target->freed) {
      s.hazards.push_back("queued " + op.kind + " writes freed device memory (region " + std::to_string(target->id) +
                          ")");
    }
    if (op.kind == "memset") {
      std::memset(op.dst, op.value, op.size);
      return;
    }
    // (a host buffer freed while this copy was queued is reported by aclrtFreeHost, which checks the queue)
    if (std::memcmp(op.src, op.src_when_queued.data(), op.size) != 0) {
      s.hazards.push_back("host buffer changed before the queued aclrtMemcpyAsync ran");
    }
    std::memcpy(op.dst, op.src, op.size);
    return;
  }
  s.launches_run += 1;
  if (s.record_launches) s.order.push_back("launch " + op.kernel + " on " + op.where);
  std::string pointers = "[";
  struct Span {
    uintptr_t begin;
    uint64_t size;
    bool freed;
  };
  std::vector<Span> dirty;
  for (size_t offset = 0; offset + 8 <= op.args.size(); offset += 8) {
    uintptr_t word = 0;
    std::memcpy(&word, op.args.data() + offset, 8);
    Region* region = region_at(word);
    if (region == nullptr) {
      for (const auto& [begin, what] : s.pending) {  // a producer issued after the launch writes it later, rightly
        if (word >= begin && word < begin + what.bytes && what.issued < op.issued) {
          s.hazards.push_back("launch of " + op.kernel + " reads memory " + what.producer +
                              " (issued before it) has not written yet");
        }
      }
      continue;
    }
    if (region->freed) {
      s.hazards.push_back("launch of " + op.kernel + " reads freed device memory (argument at byte " +
                          std::to_string(offset) + ", region " + std::to_string(region->id) + ")");
    }
    if (region->label == "device" && word % kDeviceAlign != 0) {
      s.hazards.push_back("launch of " + op.kernel + " is given device memory off a 64-byte boundary (argument at byte " +
                          std::to_string(offset) + ", region " + std::to_string(region->id) + " offset " +
                          std::to_string(word - region->begin) + ")");
    }
    dirty.push_back({word, std::min<uint64_t>(region->begin + region->size - word, kDirtyBytes), region->freed});
    if (!s.record_launches) continue;
    const size_t available = static_cast<size_t>(region->begin + region->size - word);
    const size_t dumped = available < kDumpBytes ? available : kDumpBytes;
    if (pointers.size() > 1) pointers += ",";
    pointers += "{\"offset\":" + std::to_string(offset) + ",\"region\":" + std::to_string(region->id) +
                ",\"label\":" + quoted(region->label) + ",\"region_offset\":" + std::to_string(word - region->begin) +
                ",\"region_size\":" + std::to_string(region->size) + ",\"freed\":" +
                (region->freed ? "true" : "false") + ",\"device\":" + std::to_string(region->device) +
                ",\"bytes\":" + quoted(hex(reinterpret_cast<const unsigned char*>(word), dumped)) + "}";
  }
  pointers += "]";
  if (s.record_launches) {
    s.launches.push_back("{\"kernel\":" + quoted(op.kernel) + ",\"device\":" + std::to_string(op.device) +
                         ",\"blocks\":" + std::to_string(op.blocks) + ",\"attrs\":" + op.attrs +
                         ",\"args\":" + quoted(hex(op.args.data(), op.args.size())) + ",\"pointers\":" + pointers +
                         "}");
  }
  if (s.runner != nullptr) {  // the kernel executed; it writes what it writes and leaves its scratch dirty itself
    char message[2048] = {0};
    if (s.runner(op.kernel.c_str(), op.blocks, op.args.data(), op.args.size(), message, sizeof(message)) != 0) {
      message[sizeof(message) - 1] = '\0';
      s.hazards.push_back("kernel " + op.kernel + " failed on the emulated device: " + message);
    }
    return;
  }
  for (const Span& span : dirty) {  // the kernel leaves the device memory it was given dirty
    if (!span.freed) std::memset(reinterpret_cast<void*>(span.begin), 0xA5, span.size);
  }
}

void run_stream(Stream& stream) {
  std::vector<Op> work;
  work.swap(stream.queued);
  for (Op& op : work) run(op);
}

aclError queue(aclrtStream handle, Op op) {
  Stream* stream = stream_of(handle);
  if (stream == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  if (stream->device != current_device()) {
    state().hazards.push_back(op.kind + " queued on device " + std::to_string(stream->device) + "'s stream while device " +
                              std::to_string(current_device()) + " is current");
    return ACL_ERROR_RT_STREAM_CONTEXT;
  }
  if (stream->begun) return ACL_SUCCESS;  // captured into the graph, run only when it is replayed (never here)
  op.device = stream->device;
  op.where = "device " + std::to_string(stream->device);
  if (stream->index != 0) op.where += " stream " + std::to_string(stream->index);
  stream->queued.push_back(std::move(op));
  return ACL_SUCCESS;
}

}  // namespace emulated_acl_internal

using namespace emulated_acl_internal;


// ---------------------------------------------------------------------------------------------- the test's side
extern "C" {

const char* emulated_acl_report(void) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> hold(s.lock);
  auto list = [](const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]";
  };
  std::string calls = "{";
  for (const auto& [name, count] : s.calls) {
    calls += (calls.size() > 1 ? "," : "") + quoted(name) + ":" + std::to_string(count);
  }
  calls += "}";
  std::vector<std::string> hazards, order;
  for (const auto& hazard : s.hazards) hazards.push_back(quoted(hazard));
  for (const auto& item : s.order) order.push_back(quoted(item));
  s.report = "{\"calls\":" + calls + ",\"hazards\":" + list(hazards) + ",\"order\":" + list(order) +
             ",\"allocations\":" + list(s.allocations) +
             ",\"loads\":" + list(s.loads) + ",\"launches\":" + list(s.launches) +
             ",\"launches_run\":" + std::to_string(s.launches_run) + ",\"pinned\":" + std::to_string(s.pinned) +
             ",\"peak_pinned\":" + std::to_string(s.peak_pinned) + "}";
  return s.report.c_str();
}

void emulated_acl_reset(void) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> hold(s.lock);
  s.calls.clear();
  s.hazards.clear();
  s.allocations.clear();
  s.loads.clear();
  s.launches.clear();
  s.order.clear();
}

void emulated_acl_set_memory_limit(int64_t bytes) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().memory_limit = bytes;
}

void emulated_acl_fail(const char* function) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().fail = function ? function : "";
}

void emulated_acl_set_cores(int32_t device, int64_t ai_cores, int64_t vector_cores) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().cores[device] = {ai_cores, vector_cores};
}

void* emulated_acl_stream_at(int32_t device, int32_t index) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  Stream& stream = state().streams[{device, index}];
  stream.device = device;
  stream.index = index;
  return &stream;
}

void* emulated_acl_stream(int32_t device) { return emulated_acl_stream_at(device, 0); }

void emulated_acl_set_capturing(int32_t device, int capturing) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  static_cast<Stream*>(emulated_acl_stream_at(device, 0))->capturing = capturing != 0;
}

void emulated_acl_set_device_source(int32_t (*source)(void)) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().device_source = source;
}

void emulated_acl_record_launches(int record) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().record_launches = record != 0;
}

void emulated_acl_set_soc_name(const char* name) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().soc = name;
}

void emulated_acl_set_kernel_runner(emulated_acl_kernel_runner runner) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().runner = runner;
}

int emulated_acl_region_of(const void* address, uint64_t* begin, uint64_t* size) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  Region* region = region_at(reinterpret_cast<uintptr_t>(address));
  if (region == nullptr) return 0;
  *begin = region->begin;
  *size = region->size;
  return region->freed ? -1 : 1;
}

void emulated_acl_synchronize_all(void) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  for (auto& [key, stream] : state().streams) run_stream(stream);
}

thread_local uint64_t issuing = 0;  // the program-order place of the queued work this thread runs (0: none)

uint64_t emulated_acl_issue(void) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  return ++state().issued;
}

void emulated_acl_set_issuing(uint64_t issued) { issuing = issued; }

void emulated_acl_expect_write(const void* address, uint64_t bytes, const char* producer) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  state().pending.insert({reinterpret_cast<uintptr_t>(address), Pending{bytes, producer, ++state().issued}});
}

void emulated_acl_written(const void* address) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  auto found = state().pending.find(reinterpret_cast<uintptr_t>(address));  // the oldest producer of that memory
  if (found != state().pending.end()) state().pending.erase(found);
}

void emulated_acl_uses(const void* address, const char* user) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  const Region* region = region_at(reinterpret_cast<uintptr_t>(address));
  if (region != nullptr && region->freed) {
    state().hazards.push_back(std::string(user) + " uses freed device memory (region " + std::to_string(region->id) +
                              ")");
  }
}

int64_t emulated_acl_pinned_bytes(void) { return state().pinned; }
int64_t emulated_acl_peak_pinned_bytes(void) { return state().peak_pinned; }

}  // extern "C"

// ---------------------------------------------------------------------------------------------- ACL
aclError aclrtGetDevice(int32_t* deviceId) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtGetDevice")) return status;
  *deviceId = current_device();
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtSetDevice")) return status;
  state().own_device = deviceId;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t* value) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtGetDeviceInfo")) return status;
  auto found = state().cores.find(static_cast<int32_t>(deviceId));
  if (found == state().cores.end()) return ACL_ERROR_RT_PARAM_INVALID;
  if (attr == ACL_DEV_ATTR_AICORE_CORE_NUM) {
    *value = found->second.first;
  } else if (attr == ACL_DEV_ATTR_VECTOR_CORE_NUM) {
    *value = found->second.second;
  } else {
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtSynchronizeDevice")) return status;
  if (aclError status = capture_forbids("aclrtSynchronizeDevice")) return status;
  const int32_t device = current_device();
  for (const auto& [index, stream] : state().streams) {  // it would wait for a stream that is being captured, in any
    if (stream.device == device && stream.begun) {      // mode (torch_npu NPUCachingAllocator.cpp: synchronisation
      recent_error = "EE9999: [emulated ACL] aclrtSynchronizeDevice while a stream of the device is captured";
      return ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;     // is illegal during a real capture)
    }
  }
  for (auto& [index, stream] : state().streams) {
    if (stream.device == device) run_stream(stream);
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtSynchronizeStream")) return status;
  Stream* found = stream_of(stream);
  if (found == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  run_stream(*found);
  return ACL_SUCCESS;
}

// Device memory at exactly ACL's alignment: 64 bytes past a 128-byte boundary; never freed (aclrtFree poisons it).
// Its content is whatever was there (aclrtMalloc initialises nothing): here kFreshByte, never zeros a kernel could
// mistake for initialised locks.
void* device_memory(uint64_t size) {
  auto* raw = static_cast<unsigned char*>(std::malloc(size + 3 * kDeviceAlign));  // room to align, then offset
  std::memset(raw, kFreshByte, size + 3 * kDeviceAlign);
  const uintptr_t above = (reinterpret_cast<uintptr_t>(raw) + 2 * kDeviceAlign - 1) / (2 * kDeviceAlign) * (2 * kDeviceAlign);
  return reinterpret_cast<void*>(above + kDeviceAlign);
}

uint64_t round_up_32(uint64_t size) { return (size + 31) / 32 * 32; }

// Past the test's memory limit a device allocation fails as CANN's does: ACL_ERROR_RT_MEMORY_ALLOCATION, and a recent
// error message torch_npu recognises as out-of-memory (NPUException.cpp isCannOOM: "EL0004", "Failed to allocate").
aclError out_of_memory(uint64_t size, const char* function) {
  State& s = state();
  if (s.memory_limit <= 0 || s.device_bytes + static_cast<int64_t>(size) <= s.memory_limit) return ACL_SUCCESS;
  recent_error = std::string("EL0004: [PID: emulated] Failed to allocate memory.\n        ") + function + " of " +
                 std::to_string(size) + " bytes: " + std::to_string(s.memory_limit - s.device_bytes) +
                 " bytes free (the emulated device's limit)";
  return ACL_ERROR_RT_MEMORY_ALLOCATION;
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMalloc")) return status;
  (void)policy;
  if (size == 0) return ACL_ERROR_INVALID_PARAM;  // CANN API reference: "size must not be 0"
  const uint64_t real = round_up_32(size) + 32;  // acl_rt.h: "aligned to 32 bytes and padded with 32 bytes"
  if (aclError status = out_of_memory(real, "aclrtMalloc")) return status;
  *devPtr = device_memory(real);
  add_region(*devPtr, real, "device", current_device());
  state().device_bytes += static_cast<int64_t>(real);
  return ACL_SUCCESS;
}

aclError aclrtMallocAlign32(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMallocAlign32")) return status;
  (void)policy;
  if (size == 0) return ACL_ERROR_INVALID_PARAM;
  const uint64_t real = round_up_32(size);  // acl_rt.h: "aligned to 32 bytes with no padding"
  if (aclError status = out_of_memory(real, "aclrtMallocAlign32")) return status;
  *devPtr = device_memory(real);
  add_region(*devPtr, real, "device", current_device());
  state().device_bytes += static_cast<int64_t>(real);
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtFree")) return status;
  Region* region = region_at(reinterpret_cast<uintptr_t>(devPtr));
  if (region == nullptr || region->freed || region->label != "device") return ACL_ERROR_RT_PARAM_INVALID;
  region->freed = true;  // kept, poisoned, never handed out again: a later use is seen as a use after free
  std::memset(devPtr, 0xDD, region->size);
  state().device_bytes -= static_cast<int64_t>(region->size);
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMallocHost")) return status;
  if (aclError status = capture_forbids("aclrtMallocHost")) return status;
  State& s = state();
  *hostPtr = std::malloc(size ? size : 1);
  add_region(*hostPtr, size, "pinned", -1);
  s.pinned += static_cast<int64_t>(size);
  if (s.pinned > s.peak_pinned) s.peak_pinned = s.pinned;
  return ACL_SUCCESS;
}

aclError aclrtFreeHost(void* hostPtr) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtFreeHost")) return status;
  if (aclError status = capture_forbids("aclrtFreeHost")) return status;
  State& s = state();
  Region* region = region_at(reinterpret_cast<uintptr_t>(hostPtr));
  if (region == nullptr || region->freed || region->label != "pinned") return ACL_ERROR_RT_PARAM_INVALID;
  for (auto& [key, stream] : s.streams) {
    for (const Op& op : stream.queued) {
      if (op.kind == "copy" && region_at(reinterpret_cast<uintptr_t>(op.src)) == region) {
        s.hazards.push_back("aclrtFreeHost of a host buffer a queued aclrtMemcpyAsync still reads");
      }
    }
  }
  // The block leaves the pinned count at once, but its memory is kept poisoned for the next 256 MiB of frees, so a
  // copy queued from it later is seen (and its address is not handed out again meanwhile); then it really goes (a
  // benchmark makes thousands of images).
  s.pinned -= static_cast<int64_t>(region->size);
  std::memset(hostPtr, 0xDD, region->size);
  s.quarantine[region->begin] = region->size;
  s.quarantine_order.push_back(region->begin);
  s.quarantined += region->size;
  s.regions.erase(region->begin);
  while (s.quarantined > (256ULL << 20) && !s.quarantine_order.empty()) {
    const uintptr_t oldest = s.quarantine_order.front();
    s.quarantine_order.pop_front();
    s.quarantined -= s.quarantine[oldest];
    s.quarantine.erase(oldest);
    std::free(reinterpret_cast<void*>(oldest));
  }
  return ACL_SUCCESS;
}

static bool freed_host_memory(const void* address) {
  const auto word = reinterpret_cast<uintptr_t>(address);
  const auto& quarantine = state().quarantine;
  auto found = quarantine.upper_bound(word);
  if (found == quarantine.begin()) return false;
  --found;
  return word < found->first + found->second;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMemcpy")) return status;
  State& s = state();
  if (count > destMax) return ACL_ERROR_RT_PARAM_INVALID;
  const Region* target = region_at(reinterpret_cast<uintptr_t>(dst));
  for (auto& [key, stream] : s.streams) {
    for (const Op& op : stream.queued) {
      for (const Region* region : touched(op)) {
        if (target != nullptr && region == target) {
          s.hazards.push_back("blocking aclrtMemcpy into memory that queued stream work (" + op.kind +
                              ") still uses");
        }
      }
    }
  }
  (void)kind;
  std::memcpy(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMemcpyAsync")) return status;
  if (count > destMax || kind != ACL_MEMCPY_HOST_TO_DEVICE) return ACL_ERROR_RT_PARAM_INVALID;
  if (freed_host_memory(src)) {
    state().hazards.push_back("aclrtMemcpyAsync queued from a host buffer aclrtFreeHost already freed");
  }
  Op op;
  op.kind = "copy";
  op.dst = dst;
  op.size = count;
  op.src = src;
  op.src_when_queued.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + count);
  return queue(stream, std::move(op));
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtMemsetAsync")) return status;
  if (count > maxCount) return ACL_ERROR_RT_PARAM_INVALID;
  Op op;
  op.kind = "memset";
  op.dst = devPtr;
  op.size = count;
  op.value = value;
  return queue(stream, std::move(op));
}

aclError aclrtBinaryLoadFromData(const void* data, size_t length, const aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtBinaryLoadFromData")) return status;
  uint32_t magic = 0;
  for (size_t i = 0; options != nullptr && i < options->numOpt; ++i) {
    if (options->options[i].type == ACL_RT_BINARY_LOAD_OPT_MAGIC) magic = options->options[i].value.magic;
  }
  state().loads.push_back("{\"bytes\":" + std::to_string(length) + ",\"magic\":" + std::to_string(magic) +
                          ",\"device\":" + std::to_string(current_device()) + "}");
  (void)data;
  *binHandle = new int(0);
  return ACL_SUCCESS;
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName, aclrtFuncHandle* funcHandle) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtBinaryGetFunction")) return status;
  *funcHandle = new std::string(kernelName);
  (void)binHandle;
  return ACL_SUCCESS;
}

aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg* cfg, void* hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo* placeHolderArray, size_t placeHolderNum) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtLaunchKernelWithHostArgs")) return status;
  if (funcHandle == nullptr || numBlocks == 0 || numBlocks > kMaxBlocks) return ACL_ERROR_RT_PARAM_INVALID;
  (void)placeHolderArray;
  (void)placeHolderNum;
  Op op;
  op.kind = "launch";
  op.kernel = *static_cast<std::string*>(funcHandle);
  op.blocks = numBlocks;
  if (cfg != nullptr) {
    op.attrs = "[";
    for (size_t i = 0; i < cfg->numAttrs; ++i) {
      const aclrtLaunchKernelAttr& attr = cfg->attrs[i];
      op.attrs += (i ? "," : "") + std::string("{\"id\":") + std::to_string(static_cast<int>(attr.id)) +
                  ",\"value\":" + std::to_string(attr.value.dynUBufSize) + "}";
    }
    op.attrs += "]";
  }
  op.args.assign(static_cast<unsigned char*>(hostArgs), static_cast<unsigned char*>(hostArgs) + argsSize);
  op.issued = issuing != 0 ? issuing : ++state().issued;  // queued work: when the host issued it
  return queue(stream, std::move(op));
}

const char* aclrtGetSocName() { return state().soc.c_str(); }

// acl_rt.h: the calling thread's most recent error message, once (a second read finds none).
const char* aclGetRecentErrMsg() {
  thread_local std::string read;
  read = std::move(recent_error);
  recent_error.clear();
  return read.empty() ? nullptr : read.c_str();
}

aclError aclrtLaunchCallback(aclrtCallback fn, void* userData, aclrtCallbackBlockType blockType, aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtLaunchCallback")) return status;
  if (fn == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  (void)blockType;  // the host function runs when the stream reaches it either way
  Op op;
  op.kind = "callback";
  op.callback = fn;
  op.user_data = userData;
  return queue(stream, std::move(op));
}

aclError aclrtGetHardwareSyncAddr(void** addr) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtGetHardwareSyncAddr")) return status;
  static int ffts = 0;
  *addr = &ffts;
  return ACL_SUCCESS;
}
