const uint32_t grid_0 = npu_inductor_compat_rt::grid_dim(static_cast<int64_t>(((xnumel + (256 - 1)) / (256))), 0, "triton_poi_fused_add_sin_0");
const uint32_t grid_1 = npu_inductor_compat_rt::grid_dim(static_cast<int64_t>(1), 1, "triton_poi_fused_add_sin_0");
const uint32_t grid_2 = npu_inductor_compat_rt::grid_dim(static_cast<int64_t>(1), 2, "triton_poi_fused_add_sin_0");
if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
if (triton_poi_fused_add_sin_0 == nullptr) {
    triton_poi_fused_add_sin_0 = npu_inductor_compat_rt::load_kernel("<kernel binary>", "triton_poi_fused_add_sin_0", "", cubin_dir_);
}
void* var_0 = reinterpret_cast<void*>(in_ptr0.data_ptr());
void* var_1 = reinterpret_cast<void*>(out_ptr0.data_ptr());
int32_t var_2 = static_cast<int32_t>(xnumel);
// npu_inductor_compat launch of triton_poi_fused_add_sin_0: no workspace; locks: 3 int64 slots (lock_num); ordered lock init 0
static constexpr const char* npu_kernel_ = "triton_poi_fused_add_sin_0";
npu_inductor_compat_rt::refuse_capture(npu_kernel_, "sync-block locks");
const uint64_t npu_grid_blocks_ = npu_inductor_compat_rt::grid_blocks(grid_0, grid_1, grid_2, false, npu_kernel_);
const int32_t npu_device_ = npu_inductor_compat_rt::current_device();
const uint32_t npu_block_dim_ = npu_inductor_compat_rt::block_dim(npu_grid_blocks_, false, npu_device_, false, npu_kernel_);
const std::thread::id npu_caller_ = std::this_thread::get_id();
auto npu_launch_ = [=]() -> int {
  void* npu_ffts_ = nullptr;
  npu_inductor_compat_rt::check(aclrtGetHardwareSyncAddr(&npu_ffts_), npu_kernel_, "aclrtGetHardwareSyncAddr");
  const npu_inductor_compat_rt::LockLayout npu_lock_layout_ = npu_inductor_compat_rt::lock_layout(3ULL, 0ULL, npu_inductor_compat_rt::mul(npu_block_dim_, 1ULL, npu_kernel_, "lock participants"), npu_kernel_);
  npu_inductor_compat_rt::Scratch npu_scratch_(0, npu_lock_layout_.bytes, stream_, npu_caller_, npu_kernel_);
  npu_inductor_compat_rt::check(aclrtMemsetAsync(npu_scratch_.locks, npu_lock_layout_.bytes, 0, npu_lock_layout_.bytes, stream_), npu_kernel_, "aclrtMemsetAsync (sync-block locks)");
  struct __attribute__((packed)) {
    void* ffts_addr __attribute__((aligned(8)));
    void* sync_block_lock __attribute__((aligned(8)));
    void* workspace_addr __attribute__((aligned(8)));
    void* arg_0 __attribute__((aligned(8)));
    void* arg_1 __attribute__((aligned(8)));
    int32_t arg_2 __attribute__((aligned(4)));
    int32_t grid_0 __attribute__((aligned(4)));
    int32_t grid_1 __attribute__((aligned(4)));
    int32_t grid_2 __attribute__((aligned(4)));
  } npu_args_ = {
    npu_ffts_,
    npu_scratch_.locks,
    nullptr,
    var_0,
    var_1,
    var_2,
    static_cast<int32_t>(grid_0),
    static_cast<int32_t>(grid_1),
    static_cast<int32_t>(grid_2),
  };
  npu_inductor_compat_rt::check(aclrtLaunchKernelWithHostArgs(triton_poi_fused_add_sin_0, npu_block_dim_, stream_, nullptr, &npu_args_, sizeof(npu_args_), nullptr, 0), npu_kernel_, "aclrtLaunchKernelWithHostArgs");
