"""`codegen --cpp-wrapper --execute`'s set-up: the kernel the emulated device runs, made from what the autotuner
saved for the C++ wrapper, and a torch line with no emulated runtime to run against (the runs themselves:
test_execute_cpp.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from npu_inductor_compat.tools.simulated.codegen import headers
from npu_inductor_compat.tools.simulated.execution import cpp_device, execute_cpp


def _saved() -> dict[str, object]:
    """Params as save_gpu_kernel stores them for the C++ wrapper, with the launch metadata fields the
    autotuner-kernel-metadata fix adds (None where the kernel's metadata has no such field)."""
    return {
        "mangled_name": "triton_poi_fused_add_0",
        "call_args": ["in_ptr0", "out_ptr0", "xnumel", "ks0"],
        "triton_meta": {
            "signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp16", "xnumel": "i32", "ks0": "i64"},
            "constants": {"ks0": 1},
        },
        "config": {"XBLOCK": 256},
        "workspace_size": 64,
        "lock_num": 2,
        "mix_mode": "aiv",
        "coalesce_factor": None,
    }


def test_the_device_kernel_takes_its_arguments_constants_and_metadata_from_the_saved_params() -> None:
    autotuner = SimpleNamespace(fn=SimpleNamespace(fn=None))  # no Python function: nothing to make interpretable
    kernel = cpp_device.device_kernel(_saved(), autotuner)
    assert kernel.arguments == [("in_ptr0", "*fp32"), ("out_ptr0", "*fp16"), ("xnumel", "i32")]  # ks0 compiled in
    assert kernel.compiled_in == {"ks0": 1, "XBLOCK": 256}
    assert kernel.meta == {"workspace_size": 64, "lock_num": 2, "mix_mode": "aiv"}  # no None field
    assert kernel.function is autotuner.fn
    given = cpp_device.device_kernel(_saved(), autotuner, {"lock_num": 3})
    assert given.meta == {"lock_num": 3}  # the tests' scenarios stand in for the compiler's metadata


def test_without_headers_to_build_against_each_cpp_graph_is_not_run_and_nothing_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable(version: str) -> list[object]:
        raise headers.HeaderCheckUnavailable(f"no torch_npu release is paired with torch {version}")

    monkeypatch.setattr(headers, "torch_npu_headers", unavailable)
    before = dict(os.environ)
    with execute_cpp.emulated_runtime_for(True, print) as runtime:
        assert isinstance(runtime, str) and runtime.startswith("no emulated NPU runtime to run it against: ")
        assert "no torch_npu release is paired with torch" in runtime
        assert dict(os.environ) == before
    with execute_cpp.emulated_runtime_for(False, print) as runtime:
        assert runtime is None
