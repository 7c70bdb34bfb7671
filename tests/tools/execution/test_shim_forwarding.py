"""The stub libtorch_npu's generated C-shim ops (shim_forwarding.py): which torch_npu C-shim functions are forwarded to
torch's CPU shim, and the call each makes (the runs themselves: test_execute_cpp.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated.execution import shim_forwarding

NPU = """
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
    AtenTensorHandle* ret0);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
    int64_t indices_len_, AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
    AtenTensorHandle mat1, AtenTensorHandle mat2, double beta, double alpha);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_native_dropout(AtenTensorHandle input, double p, int32_t* train,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_baddbmm(AtenTensorHandle self, AtenTensorHandle* batch1);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_npu_only_here(AtenTensorHandle self, AtenTensorHandle* ret0);
"""
CPU = NPU.replace("aoti_torch_npu_", "aoti_torch_cpu_").replace(
    "AtenTensorHandle* batch1", "AtenTensorHandle* batch1, double beta"
)


def test_only_functions_both_headers_declare_alike_and_not_written_by_hand_are_forwarded() -> None:
    ops = shim_forwarding.forwarded_ops(NPU, CPU.replace("aoti_torch_cpu_only_here", "aoti_torch_cpu_other"), {"cat"})
    # cat: by hand; baddbmm: the CPU shim's parameters differ; only_here: no CPU function of that name
    assert list(ops) == ["index_put", "addmm_out", "native_dropout"]


def test_each_parameter_is_passed_as_its_c_type_says(tmp_path: Path) -> None:
    (tmp_path / "npu.h").write_text(NPU)
    (tmp_path / "cpu.h").write_text(CPU)
    stub = 'extern "C" AOTITorchError aoti_torch_npu_addmm_out(AtenTensorHandle out) {}\n'
    (tmp_path / "stub.cpp").write_text(stub)
    text = shim_forwarding.source(tmp_path / "npu.h", tmp_path / "cpu.h", (tmp_path / "stub.cpp",))
    assert "aoti_torch_cpu_cat(host.list(tensors, tensors_len_), tensors_len_, dim, host.ret(ret0));" in text
    indices = "host.optional_list(indices, indices_len_), indices_len_"
    assert f"aoti_torch_cpu_index_put(host.in(self), {indices}, host.in(values), accumulate, host.ret(ret0));" in text
    assert "aoti_torch_cpu_native_dropout(host.in(input), p, train, host.ret(ret0), host.ret(ret1));" in text
    assert "addmm_out" not in text  # written by hand
    assert 'forwarded("native_dropout", ' in text


def test_a_list_without_its_length_is_not_forwarded() -> None:
    header = "AOTITorchError aoti_torch_{}_odd(const AtenTensorHandle* tensors, int64_t count);"
    assert shim_forwarding.forwarded_ops(header.format("npu"), header.format("cpu"), set()) == {}


def test_torchs_own_cpu_shim_header_parses() -> None:
    """Every declaration of the installed torch's c_shim_cpu.h is read, with parameters ending in the returns."""
    from torch.utils.cpp_extension import include_paths

    found = [Path(path) / shim_forwarding.CPU_HEADER for path in include_paths()]
    header = next((path for path in found if path.is_file()), None)
    if header is None:
        pytest.fail(f"torch's {shim_forwarding.CPU_HEADER} is missing from {include_paths()}")
    text = header.read_text()
    declared = shim_forwarding.declarations(text, "cpu")
    assert len(declared) == text.count("AOTITorchError aoti_torch_cpu_") > 100
    assert declared["convolution"][-1] == ("AtenTensorHandle*", "ret0")
    assert declared["convolution"][0] == ("AtenTensorHandle", "input")
