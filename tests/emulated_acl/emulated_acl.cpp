// Emulated ACL runtime (tests only). Device memory is host memory; one stream whose work is queued and runs, in
// order, at aclrtSynchronizeStream. It records every call, the scratch blocks handed out, and for each executed
// launch its argument struct and the lock contents the kernel would have seen; a launched kernel then dirties its
// locks and workspace, as a real one may. Hazards it flags:
//   - a blocking aclrtMemcpy into device memory that queued stream work still uses (the race a recycled lock block
//     hits when it is initialised with a blocking copy);
//   - a host buffer that changed between an aclrtMemcpyAsync being queued and the copy running.
// EMULATED_ACL_FAIL=<function name> makes that function return EMULATED_ACL_INJECTED_ERROR.
#include "acl/acl.h"
#include "emulated_scratch.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Region {
  uintptr_t begin = 0;
  uint64_t size = 0;
  std::string label;
};

struct Op {
  std::string kind;  // "memset", "copy", "launch"
  void* dst = nullptr;
  uint64_t size = 0;
  int value = 0;
  const void* src = nullptr;
  std::vector<unsigned char> src_when_queued;
  std::vector<unsigned char> args;
  uint32_t blocks = 0;
  int index = 0;
};

struct State {
  std::map<std::string, int> calls;
  std::string fail;
  int blocking_copies = 0;
  std::vector<std::string> hazards;
  std::map<uintptr_t, Region> regions;  // every device block ever handed out, by start address
  std::map<uint64_t, std::vector<void*>> free_blocks;
  std::vector<std::string> allocations;  // JSON objects, in order
  std::vector<std::string> loads;
  std::vector<std::string> launches;
  std::vector<Op> queued;
  std::string error;
  int launch_count = 0;
  State() {
    const char* fail_env = std::getenv("EMULATED_ACL_FAIL");
    fail = fail_env ? fail_env : "";
  }
};

State& state() {
  static State instance;
  return instance;
}

aclError enter(const char* function) {
  State& s = state();
  s.calls[function] += 1;
  return s.fail == function ? EMULATED_ACL_INJECTED_ERROR : ACL_SUCCESS;
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

const Region* region_at(uintptr_t address) {
  State& s = state();
  auto found = s.regions.upper_bound(address);
  if (found == s.regions.begin()) return nullptr;
  --found;
  const Region& region = found->second;
  return address < region.begin + region.size ? &region : nullptr;
}

// Device regions a queued op writes or a launch may touch (any 8-byte argument word pointing at a region start).
std::vector<const Region*> touched(const Op& op) {
  std::vector<const Region*> out;
  if (op.kind == "launch") {
    for (size_t offset = 0; offset + 8 <= op.args.size(); offset += 4) {
      uintptr_t word = 0;
      std::memcpy(&word, op.args.data() + offset, 8);
      auto found = state().regions.find(word);
      if (found != state().regions.end()) out.push_back(&found->second);
    }
  } else if (const Region* region = region_at(reinterpret_cast<uintptr_t>(op.dst))) {
    out.push_back(region);
  }
  return out;
}

void run_queued() {
  State& s = state();
  for (const Op& op : s.queued) {
    if (op.kind == "memset") {
      std::memset(op.dst, op.value, op.size);
    } else if (op.kind == "copy") {
      if (std::memcmp(op.src, op.src_when_queued.data(), op.size) != 0) {
        s.hazards.push_back("host buffer changed before the queued aclrtMemcpyAsync ran");
      }
      std::memcpy(op.dst, op.src, op.size);
    } else {
      std::string pointers = "[";
      std::string locks = "null";
      for (size_t offset = 0; offset + 8 <= op.args.size(); offset += 4) {
        uintptr_t word = 0;
        std::memcpy(&word, op.args.data() + offset, 8);
        auto found = s.regions.find(word);
        if (found == s.regions.end()) continue;
        const Region& region = found->second;
        if (pointers.size() > 1) pointers += ",";
        pointers += "{\"offset\":" + std::to_string(offset) + ",\"label\":" + quoted(region.label) +
                    ",\"size\":" + std::to_string(region.size) + "}";
        if (region.label == "sync-block locks") {
          locks = "[";
          const auto* slots = reinterpret_cast<const int64_t*>(region.begin);
          for (uint64_t i = 0; i < region.size / 8; ++i) {
            locks += (i ? "," : "") + std::to_string(slots[i]);
          }
          locks += "]";
        }
      }
      pointers += "]";
      s.launches.push_back("{\"index\":" + std::to_string(op.index) + ",\"blocks\":" + std::to_string(op.blocks) +
                           ",\"args\":" + quoted(hex(op.args.data(), op.args.size())) + ",\"pointers\":" + pointers +
                           ",\"locks_before\":" + locks + "}");
      for (const Region* region : touched(op)) {  // the kernel leaves its scratch dirty
        if (region->label != "tensor") std::memset(reinterpret_cast<void*>(region->begin), 0xA5, region->size);
      }
    }
  }
  s.queued.clear();
}

}  // namespace

namespace emulated_acl {

void* allocate(uint64_t bytes, aclrtStream stream, const char* label) {
  State& s = state();
  (void)stream;
  void* block = nullptr;
  auto& free_list = s.free_blocks[bytes];
  if (!free_list.empty()) {
    block = free_list.back();
    free_list.pop_back();
  } else {
    block = std::malloc(bytes ? bytes : 1);
  }
  const auto begin = reinterpret_cast<uintptr_t>(block);
  s.regions[begin] = Region{begin, bytes, label};
  s.allocations.push_back("{\"label\":" + quoted(label) + ",\"size\":" + std::to_string(bytes) +
                          ",\"ptr\":" + std::to_string(begin) + "}");
  return block;
}

void release(void* block, uint64_t bytes) { state().free_blocks[bytes].push_back(block); }

aclrtStream stream() {
  static int the_stream = 0;
  return &the_stream;
}

void* device_buffer(uint64_t bytes, const char* label) {
  void* block = std::calloc(bytes, 1);
  const auto begin = reinterpret_cast<uintptr_t>(block);
  state().regions[begin] = Region{begin, bytes, label};
  return block;
}

void error(const std::string& message) { state().error = message; }

void report() {
  State& s = state();
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
  std::vector<std::string> hazards;
  for (const auto& hazard : s.hazards) hazards.push_back(quoted(hazard));
  std::printf("{\"calls\":%s,\"blocking_copies\":%d,\"hazards\":%s,\"allocations\":%s,\"loads\":%s,"
              "\"launches\":%s,\"error\":%s}\n",
              calls.c_str(), s.blocking_copies, list(hazards).c_str(), list(s.allocations).c_str(),
              list(s.loads).c_str(), list(s.launches).c_str(), s.error.empty() ? "null" : quoted(s.error).c_str());
}

}  // namespace emulated_acl

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  if (aclError status = enter("aclrtMallocHost")) return status;
  *hostPtr = std::malloc(size ? size : 1);
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  if (aclError status = enter("aclrtMemcpy")) return status;
  State& s = state();
  s.blocking_copies += 1;
  if (count > destMax) return 1;
  const Region* target = region_at(reinterpret_cast<uintptr_t>(dst));
  for (const Op& op : s.queued) {
    for (const Region* region : touched(op)) {
      if (target != nullptr && region == target) {
        s.hazards.push_back("blocking aclrtMemcpy into " + target->label + " while queued stream work (" + op.kind +
                            ") still uses it");
      }
    }
  }
  (void)kind;
  std::memcpy(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (aclError status = enter("aclrtMemcpyAsync")) return status;
  if (count > destMax || kind != ACL_MEMCPY_HOST_TO_DEVICE || stream != emulated_acl::stream()) return 1;
  Op op;
  op.kind = "copy";
  op.dst = dst;
  op.size = count;
  op.src = src;
  op.src_when_queued.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + count);
  state().queued.push_back(op);
  return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  if (aclError status = enter("aclrtMemsetAsync")) return status;
  if (count > maxCount || stream != emulated_acl::stream()) return 1;
  Op op;
  op.kind = "memset";
  op.dst = devPtr;
  op.size = count;
  op.value = value;
  state().queued.push_back(op);
  return ACL_SUCCESS;
}

aclError aclrtBinaryLoadFromData(const void* data, size_t length, const aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle) {
  if (aclError status = enter("aclrtBinaryLoadFromData")) return status;
  uint32_t magic = 0;
  for (size_t i = 0; options != nullptr && i < options->numOpt; ++i) {
    if (options->options[i].type == ACL_RT_BINARY_LOAD_OPT_MAGIC) magic = options->options[i].value.magic;
  }
  state().loads.push_back("{\"bytes\":" + std::to_string(length) + ",\"magic\":" + std::to_string(magic) + "}");
  (void)data;
  *binHandle = new int(0);
  return ACL_SUCCESS;
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName, aclrtFuncHandle* funcHandle) {
  if (aclError status = enter("aclrtBinaryGetFunction")) return status;
  *funcHandle = new std::string(kernelName);
  (void)binHandle;
  return ACL_SUCCESS;
}

aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg* cfg, void* hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo* placeHolderArray, size_t placeHolderNum) {
  if (aclError status = enter("aclrtLaunchKernelWithHostArgs")) return status;
  if (funcHandle == nullptr || stream != emulated_acl::stream()) return 1;
  (void)cfg;
  (void)placeHolderArray;
  (void)placeHolderNum;
  Op op;
  op.kind = "launch";
  op.blocks = numBlocks;
  op.index = state().launch_count++;
  op.args.assign(static_cast<unsigned char*>(hostArgs), static_cast<unsigned char*>(hostArgs) + argsSize);
  state().queued.push_back(op);
  return ACL_SUCCESS;
}

aclError aclrtGetHardwareSyncAddr(void** addr) {
  if (aclError status = enter("aclrtGetHardwareSyncAddr")) return status;
  static int ffts = 0;
  *addr = &ffts;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (aclError status = enter("aclrtGetDevice")) return status;
  *deviceId = 0;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  (void)deviceId;
  return enter("aclrtSetDevice");
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  if (aclError status = enter("aclrtSynchronizeStream")) return status;
  (void)stream;
  run_queued();
  return ACL_SUCCESS;
}
