// The emulated ACL runtime's shared state (emulated_acl.cpp, emulated_acl_capture.cpp): one libascendcl.so. Internal:
// hidden from the library's exports, which are ACL's functions and the test's side (emulated_acl.h).
#pragma once
#include <acl/acl.h>
#include <acl/acl_rt.h>
#include <acl/error_codes/rt_error_codes.h>

#include "emulated_acl.h"

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace emulated_acl_internal __attribute__((visibility("hidden"))) {


constexpr uint32_t kMaxBlocks = 65535;
constexpr size_t kDumpBytes = 4096;
constexpr uint64_t kDirtyBytes = 64 << 10;  // what a launch dirties from each pointer it was given
constexpr uint64_t kDeviceAlign = 64;       // aclrtMalloc: "The start address of the memory is 64-byte aligned"
constexpr int kFreshByte = 0x5A;             // what newly allocated device memory holds

struct Region {
  uintptr_t begin = 0;
  uint64_t size = 0;
  std::string label;  // "device" (aclrtMalloc) or "pinned" (aclrtMallocHost)
  int id = 0;
  int32_t device = -1;
  bool freed = false;
};

struct Op {
  std::string kind;  // "memset", "copy", "launch", "callback"
  int32_t device = 0;
  void* dst = nullptr;
  uint64_t size = 0;
  int value = 0;
  const void* src = nullptr;
  std::vector<unsigned char> src_when_queued;
  std::string kernel;
  uint32_t blocks = 0;
  std::string attrs = "[]";
  std::vector<unsigned char> args;
  std::string where;  // "device D" for a default stream, "device D stream S" for another
  aclrtCallback callback = nullptr;  // aclrtLaunchCallback: a host function run when the stream reaches it
  void* user_data = nullptr;
  uint64_t issued = 0;  // its place in the host's program order (emulated_acl_issue)
  struct Event* event = nullptr;  // "record": the event it completes
};

struct Event {  // aclrtCreateEventWithFlag: complete once every record queued on it has run
  uint64_t pending = 0;
};

struct Pending {  // memory a producer will write, and its place in program order
  uint64_t bytes;
  std::string producer;
  uint64_t issued;
};

struct Stream {
  int32_t device = 0;
  int32_t index = 0;  // 0: the device's default stream
  std::vector<Op> queued;
  bool capturing = false;  // aclmdlRICaptureGetInfo's answer (set by the test)
  bool begun = false;      // between aclmdlRICaptureBegin and aclmdlRICaptureEnd: its work is captured, not run
  std::thread::id captured_by;
  aclmdlRICaptureMode begun_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
};

struct State {
  std::recursive_mutex lock;
  std::map<std::string, int> calls;
  std::string fail;
  std::vector<std::string> hazards;
  std::map<uintptr_t, Region> regions;  // every block ever handed out, by start address (never reused)
  int next_region = 0;
  std::vector<std::string> allocations;
  std::vector<std::string> loads;
  std::vector<std::string> launches;
  std::vector<std::string> order;  // what reached each stream's execution, in order: launches and host callbacks
  std::multimap<uintptr_t, Pending> pending;  // by start address, oldest first: producers on a stream write in order
  uint64_t issued = 0;  // the host's program order so far
  std::map<uintptr_t, uint64_t> quarantine;  // freed pinned blocks by start, kept (poisoned) for a while
  std::deque<uintptr_t> quarantine_order;     // oldest first: really freed past the bound
  uint64_t quarantined = 0;
  std::map<std::pair<int32_t, int32_t>, Stream> streams;  // by (device, index)
  std::map<int32_t, std::pair<int64_t, int64_t>> cores;
  int32_t (*device_source)() = nullptr;
  int32_t own_device = 0;
  bool record_launches = true;
  std::string soc = "Ascend910B1";  // aclrtGetSocName's answer (a test may name another)
  emulated_acl_kernel_runner runner = nullptr;  // the test's device: executes each launch
  int launches_run = 0;
  int64_t pinned = 0;
  int64_t peak_pinned = 0;
  int64_t device_bytes = 0;   // live device memory
  int64_t memory_limit = 0;   // what a device holds (the test's; 0: no limit)
  std::string report;
};

State& state();
// aclGetRecentErrMsg's text: the calling thread's last failure, kept until it is read.
extern thread_local std::string recent_error;
// Counts the call; EMULATED_ACL_INJECTED_ERROR when the test makes `function` fail.
aclError enter(const char* function);
int32_t current_device();
Stream* stream_of(aclrtStream stream);
// Runs a stream's queued work in order.
void run_stream(Stream& stream);
// Queues `op` on the stream (captured, not queued, while the stream is being captured).
aclError queue(aclrtStream handle, Op op);
// ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT when an aclgraph capture forbids `function` on this thread (emulated_acl_capture.cpp).
aclError capture_forbids(const char* function);

}  // namespace emulated_acl_internal
