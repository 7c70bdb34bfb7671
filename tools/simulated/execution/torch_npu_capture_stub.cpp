// Stub libtorch_npu.so, continued: torch_npu's answer to "is the current stream being captured into an
// aclgraph?", as torch_npu (Ascend/pytorch master) gives it to its own operators:
//  - core/npu/NPUGraphsUtils.cpp, currentStreamCaptureStatusMayInitCtx: "none" unless capture is supported, else
//    aclmdlRICaptureGetInfo on the current stream (read without emptying the task queue: stream(false)), an error
//    thrown when it fails;
//  - core/npu/interface/AclInterface.cpp, IsCaptureSupported: the SoC families 310P1-310P7, 910B1 up to (not
//    including) 310B1, and 910_9391 onwards (the numbering of core/npu/NpuVariables.h), and then only when
//    aclmdlRICaptureGetInfo is found in libascendcl at run time (TORCH_NPU_GET_FUNC: dlsym); both decided once;
//  - core/npu/NpuVariables.cpp: the SoC from aclrtGetSocName, by name (an unknown name is an error there).
#include <acl/acl.h>
#include <acl/acl_rt.h>
#include <dlfcn.h>

#include <map>
#include <stdexcept>
#include <string>

extern "C" void* emulated_torch_npu_current_stream(void);  // torch_npu_stub.cpp: this thread's current stream

// NPUGraphsUtils.h declares these (its CaptureStatus: an int enum of aclmdlRICaptureStatus's values); declared here
// rather than included, which would cost every build of this stub seconds of torch_npu's headers. The symbol is the
// same: a function's return type is not part of its mangled name.
namespace c10_npu {
enum class CaptureStatus : int;
CaptureStatus currentStreamCaptureStatusMayInitCtx();
}  // namespace c10_npu

namespace {

using CaptureQuery = aclError (*)(aclrtStream, aclmdlRICaptureStatus*, aclmdlRI*);

// NpuVariables.h's SocVersion values for the names NpuVariables.cpp maps (910 family from 100, 310P from 200, 910B
// from 220, 310B from 240, 910_93 from 250, 950 at 260)
int soc_version(const std::string& name) {
  static const std::map<std::string, int> versions = {
      {"Ascend910PremiumA", 100}, {"Ascend910ProA", 101},  {"Ascend910A", 102},     {"Ascend910ProB", 103},
      {"Ascend910B", 104},        {"Ascend310P1", 200},    {"Ascend310P2", 201},    {"Ascend310P3", 202},
      {"Ascend310P4", 203},       {"Ascend310P5", 204},    {"Ascend310P7", 205},    {"Ascend910B1", 220},
      {"Ascend910B2", 221},       {"Ascend910B2C", 222},   {"Ascend910B3", 223},    {"Ascend910B4", 224},
      {"Ascend910B4-1", 225},     {"Ascend310B1", 240},    {"Ascend310B2", 241},    {"Ascend310B3", 242},
      {"Ascend310B4", 243},       {"Ascend910_9391", 250}, {"Ascend910_9392", 251}, {"Ascend910_9381", 252},
      {"Ascend910_9382", 253},    {"Ascend910_9372", 254}, {"Ascend910_9362", 255}, {"Ascend910_9363", 256}};
  const auto found = versions.find(name);
  if (found != versions.end()) return found->second;
  if (name.rfind("Ascend950", 0) == 0) return 260;
  throw std::runtime_error("Unsupported soc version: " + name);
}

// The capture query, or null where torch_npu would not ask: a SoC without capture, or no such ACL function.
CaptureQuery capture_query() {
  static const CaptureQuery query = []() -> CaptureQuery {
    const char* name = aclrtGetSocName();
    const int soc = soc_version(name == nullptr ? "" : name);
    const bool family = (soc >= 200 && soc <= 205) || (soc >= 220 && soc < 240) || soc >= 250;
    if (!family) return nullptr;
    Dl_info library{};  // the libascendcl this process loaded (the one defining aclrtGetSocName)
    if (dladdr(reinterpret_cast<void*>(&aclrtGetSocName), &library) == 0) return nullptr;
    void* handle = dlopen(library.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    return handle == nullptr ? nullptr : reinterpret_cast<CaptureQuery>(dlsym(handle, "aclmdlRICaptureGetInfo"));
  }();
  return query;
}

}  // namespace

namespace c10_npu {

CaptureStatus currentStreamCaptureStatusMayInitCtx() {
  const CaptureQuery query = capture_query();
  if (query == nullptr) return static_cast<CaptureStatus>(ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
  aclmdlRI model = nullptr;
  const aclError error = query(emulated_torch_npu_current_stream(), &status, &model);
  if (error != ACL_SUCCESS) {  // NPU_CHECK_ERROR
    throw std::runtime_error("aclmdlRICaptureGetInfo failed with ACL error " + std::to_string(error));
  }
  return static_cast<CaptureStatus>(static_cast<int>(status));
}

}  // namespace c10_npu
