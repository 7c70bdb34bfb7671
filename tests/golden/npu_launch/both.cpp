void* var_0 = reinterpret_cast<void*>(in_ptr0.data_ptr());
void* var_1 = reinterpret_cast<void*>(out_ptr0.data_ptr());
int32_t var_2 = static_cast<int32_t>(xnumel);
// npu_inductor_compat launch of triton_poi_fused_add_sin_0: workspace 128 B/block; locks: 3 ordered, 0 unordered (sync_block_lock_layout 0x3, mix_mode -, participants x1); lock init 0
static constexpr const char* npu_kernel_ = "triton_poi_fused_add_sin_0";
const uint32_t npu_blocks_ = npu_inductor_compat_rt::blocks(grid_0, grid_1, grid_2, npu_kernel_);
const uint64_t npu_workspace_bytes_ = npu_inductor_compat_rt::mul(128ULL, npu_blocks_, npu_kernel_, "workspace size");
npu_inductor_compat_rt::Scratch npu_workspace_(npu_workspace_bytes_, stream_, npu_kernel_, "workspace");
const npu_inductor_compat_rt::LockLayout npu_lock_layout_ = npu_inductor_compat_rt::lock_layout(24ULL, 0ULL, npu_inductor_compat_rt::mul(npu_blocks_, 1ULL, npu_kernel_, "lock participants"), npu_kernel_);
npu_inductor_compat_rt::Scratch npu_locks_(npu_lock_layout_.bytes, stream_, npu_kernel_, "sync-block locks");
npu_inductor_compat_rt::check(aclrtMemsetAsync(npu_locks_.ptr, npu_lock_layout_.bytes, 0, npu_lock_layout_.bytes, stream_), npu_kernel_, "aclrtMemsetAsync (sync-block locks)");
struct __attribute__((packed)) {
  void* sync_block_lock __attribute__((aligned(alignof(void*))));
  void* workspace_addr __attribute__((aligned(alignof(void*))));
  void* arg_0 __attribute__((aligned(alignof(void*))));
  void* arg_1 __attribute__((aligned(alignof(void*))));
  int32_t arg_2 __attribute__((aligned(alignof(int32_t))));
  int32_t grid_0 __attribute__((aligned(alignof(int32_t))));
  int32_t grid_1 __attribute__((aligned(alignof(int32_t))));
  int32_t grid_2 __attribute__((aligned(alignof(int32_t))));
} npu_args_ = {
  npu_locks_.ptr,
  npu_workspace_.ptr,
  var_0,
  var_1,
  var_2,
  static_cast<int32_t>(grid_0),
  static_cast<int32_t>(grid_1),
  static_cast<int32_t>(grid_2),
};
npu_inductor_compat_rt::check(aclrtLaunchKernelWithHostArgs(triton_poi_fused_add_sin_0, npu_blocks_, stream_, nullptr, &npu_args_, sizeof(npu_args_), nullptr, 0), npu_kernel_, "aclrtLaunchKernelWithHostArgs");
