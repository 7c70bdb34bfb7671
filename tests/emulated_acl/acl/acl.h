// Emulated ACL (tests only): the subset of CANN's acl.h / acl_rt.h that the NPU launch code uses, with the same
// names and signatures as the real headers (the generated code is compiled against those separately), implemented
// on the host by emulated_acl.cpp, which records every call per stream and flags hazards.
#pragma once
#include <cstddef>
#include <cstdint>

typedef int aclError;
#define ACL_SUCCESS 0
#define EMULATED_ACL_INJECTED_ERROR 507899

typedef void* aclrtStream;
typedef void* aclrtFuncHandle;
typedef void* aclrtBinHandle;
typedef struct aclrtLaunchKernelCfg aclrtLaunchKernelCfg;
typedef struct aclrtPlaceHolderInfo aclrtPlaceHolderInfo;

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST,
  ACL_MEMCPY_HOST_TO_DEVICE,
  ACL_MEMCPY_DEVICE_TO_HOST,
  ACL_MEMCPY_DEVICE_TO_DEVICE,
} aclrtMemcpyKind;

#define ACL_RT_BINARY_MAGIC_ELF_AICORE 0x43554245U
#define ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE 0x41415246U
typedef enum { ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD = 1, ACL_RT_BINARY_LOAD_OPT_MAGIC = 2 } aclrtBinaryLoadOptionType;
typedef union aclrtBinaryLoadOptionValue {
  uint32_t isLazyLoad;
  uint32_t magic;
  int32_t cpuKernelMode;
  uint32_t rsv[4];
} aclrtBinaryLoadOptionValue;
typedef struct {
  aclrtBinaryLoadOptionType type;
  aclrtBinaryLoadOptionValue value;
} aclrtBinaryLoadOption;
typedef struct aclrtBinaryLoadOptions {
  aclrtBinaryLoadOption* options;
  size_t numOpt;
} aclrtBinaryLoadOptions;

aclError aclrtMallocHost(void** hostPtr, size_t size);
aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind);
aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream);
aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
aclError aclrtBinaryLoadFromData(const void* data, size_t length, const aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle);
aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName, aclrtFuncHandle* funcHandle);
aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg* cfg, void* hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo* placeHolderArray, size_t placeHolderNum);
aclError aclrtGetHardwareSyncAddr(void** addr);
aclError aclrtGetDevice(int32_t* deviceId);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtSynchronizeStream(aclrtStream stream);
