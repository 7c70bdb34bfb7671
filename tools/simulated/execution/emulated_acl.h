// The host side of the emulated ACL runtime (libascendcl.so from emulated_acl.cpp): what a test or codegen asks of it.
// Plain C, so Python reaches it with ctypes in the process that runs the generated wrapper.
#pragma once
#include <stdint.h>

#define EMULATED_ACL_INJECTED_ERROR 507899

#ifdef __cplusplus
extern "C" {
#endif

// Everything recorded since the last reset, as JSON (valid until the next call).
const char* emulated_acl_report(void);
// Forget calls, launches and hazards (memory and loaded kernels stay).
void emulated_acl_reset(void);
// Make every later call of `function` fail with EMULATED_ACL_INJECTED_ERROR ("" for none).
void emulated_acl_fail(const char* function);
// The device memory a device holds (0: no limit).
void emulated_acl_set_memory_limit(int64_t bytes);
// The core counts aclrtGetDeviceInfo reports for `device`.
void emulated_acl_set_cores(int32_t device, int64_t ai_cores, int64_t vector_cores);
// Whether `device`'s stream reports an aclgraph capture in progress (aclmdlRICaptureGetInfo).
void emulated_acl_set_capturing(int32_t device, int capturing);
// What aclrtGetSocName answers (Ascend910B1 unless set; torch_npu reads it once, so set it before the first use).
void emulated_acl_set_soc_name(const char* name);
// Stream `index` of `device` (created on first use), and its default stream (index 0).
void* emulated_acl_stream_at(int32_t device, int32_t index);
void* emulated_acl_stream(int32_t device);
// Where the current device comes from: torch_npu keeps ACL's current device in step with its own (NPUFunctions.cpp,
// SetDevice calls aclrtSetDevice); under the simulated NPU the device guard is torch's, so the stub torch_npu hands
// this runtime a function that reads it.
void emulated_acl_set_device_source(int32_t (*source)(void));
// Whether each executed launch is kept for the report (on by default; benchmarks turn it off).
void emulated_acl_record_launches(int record);
// Run the queued work of every stream.
void emulated_acl_synchronize_all(void);
// Dataflow: `producer` (a torch_npu op issued on the host) will write [address, address + bytes) when its queued work
// reaches the stream; a launch that runs before that and is given a pointer into it is a hazard.
void emulated_acl_expect_write(const void* address, uint64_t bytes, const char* producer);
void emulated_acl_written(const void* address);
// Program order: a place for work the host issues now (torch_npu's queue stamps each entry), and the place of the
// queued work this thread runs now (0: none), which a launch it makes takes (else a launch takes a new place).
uint64_t emulated_acl_issue(void);
void emulated_acl_set_issuing(uint64_t issued);
// A host function on a stream (a torch_npu op's stand-in) uses the device memory at `address` as it runs: a hazard
// when that memory was freed (`user` names the use).
void emulated_acl_uses(const void* address, const char* user);
// Executes each launch when it reaches its stream, instead of dirtying the memory it was given: called with the
// kernel's name, blockDim and the packed argument bytes; returns 0, or non-zero with a message written into
// `message` (at most `capacity` bytes, NUL included), which becomes a hazard naming the kernel. NULL: no runner.
typedef int (*emulated_acl_kernel_runner)(const char* kernel, uint32_t blocks, const void* args, uint64_t size,
                                          char* message, uint64_t capacity);
void emulated_acl_set_kernel_runner(emulated_acl_kernel_runner runner);
// The block of device or pinned memory `address` lies in: 1 (live) or -1 (freed) with its start and size, or 0.
int emulated_acl_region_of(const void* address, uint64_t* begin, uint64_t* size);
// Bytes of pinned host memory now and at the most since the start.
int64_t emulated_acl_pinned_bytes(void);
int64_t emulated_acl_peak_pinned_bytes(void);

#ifdef __cplusplus
}
#endif
