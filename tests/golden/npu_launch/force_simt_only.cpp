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
// npu_inductor_compat launch of triton_poi_fused_add_sin_0: pure SIMT: no workspace or lock pointers; SIMT, dynamic unified buffer 1024 B
static constexpr const char* npu_kernel_ = "triton_poi_fused_add_sin_0";
const uint64_t npu_grid_blocks_ = npu_inductor_compat_rt::grid_blocks(grid_0, grid_1, grid_2, false, npu_kernel_);
const int32_t npu_device_ = npu_inductor_compat_rt::current_device();
const uint32_t npu_block_dim_ = npu_inductor_compat_rt::block_dim(npu_grid_blocks_, false, npu_device_, false, npu_kernel_);
auto npu_launch_ = [=]() -> int {
  void* npu_ffts_ = nullptr;
  npu_inductor_compat_rt::check(aclrtGetHardwareSyncAddr(&npu_ffts_), npu_kernel_, "aclrtGetHardwareSyncAddr");
  struct __attribute__((packed)) {
    void* ffts_addr __attribute__((aligned(8)));
    void* arg_0 __attribute__((aligned(8)));
    void* arg_1 __attribute__((aligned(8)));
    int32_t arg_2 __attribute__((aligned(4)));
    int32_t grid_0 __attribute__((aligned(4)));
    int32_t grid_1 __attribute__((aligned(4)));
    int32_t grid_2 __attribute__((aligned(4)));
  } npu_args_ = {
    npu_ffts_,
    var_0,
    var_1,
    var_2,
    static_cast<int32_t>(grid_0),
    static_cast<int32_t>(grid_1),
    static_cast<int32_t>(grid_2),
  };
  aclrtLaunchKernelAttr npu_attr_{};
  npu_attr_.id = ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE;
  npu_attr_.value.dynUBufSize = 1024U;
  aclrtLaunchKernelCfg npu_config_{&npu_attr_, 1};
  npu_inductor_compat_rt::check(aclrtLaunchKernelWithHostArgs(triton_poi_fused_add_sin_0, npu_block_dim_, stream_, &npu_config_, &npu_args_, sizeof(npu_args_), nullptr, 0), npu_kernel_, "aclrtLaunchKernelWithHostArgs");
