"""Call-site constexprs of a C++ wrapper's kernels (call_site_constants.py): the value every call of the kernel's
launcher passes, read by the launcher's own parameter names (executed: test_execute_cpp.py on torch 2.7)."""

from __future__ import annotations

from npu_inductor_compat.tools.simulated.execution.call_site_constants import call_site_values

WRAPPER = """
static inline void call_triton_k(
    const RAIIAtenTensorHandle& in_ptr0,
    int64_t load_seed_offset,
    int64_t load_seed_offset1,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_) {
    int32_t var_1 = static_cast<int32_t>(load_seed_offset1);
}
void inductor_entry_impl() {
    call_triton_k(wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf0, 2, int_array_1, int_array_2, 0L)),
        1L, 0L, 64L, 0, stream0);
    call_triton_k(buf1, 1L, 1L, s0, 0, stream0);
}
"""


def test_the_value_every_call_passes_is_read_by_the_launchers_parameter_name() -> None:
    assert call_site_values(WRAPPER, "triton_k", ["load_seed_offset"]) == {"load_seed_offset": 1}


def test_calls_that_disagree_or_pass_an_expression_give_no_value() -> None:
    assert call_site_values(WRAPPER, "triton_k", ["load_seed_offset1", "xnumel"]) == {}


def test_a_name_the_launcher_does_not_take_or_a_kernel_not_launched_gives_nothing() -> None:
    assert call_site_values(WRAPPER, "triton_k", ["XBLOCK"]) == {}
    assert call_site_values(WRAPPER, "triton_other", ["load_seed_offset"]) == {}
    assert call_site_values(WRAPPER.replace("true", "x"), "triton_k", []) == {}


def test_booleans_and_suffixed_integers_are_literals() -> None:
    wrapper = "static void call_triton_b(bool flag, int64_t n) {}\ncall_triton_b(true, 7UL);\ncall_triton_b(true, 7UL);"
    assert call_site_values(wrapper, "triton_b", ["flag", "n"]) == {"flag": True, "n": 7}
