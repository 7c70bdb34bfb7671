"""This package's own NPU codegen pieces, used when the device provider does not bring torch_npu's.

Imported only when a layer is applied (it imports Inductor).
"""

from __future__ import annotations

from typing import Any

from torch._inductor.codegen.cpp_wrapper_gpu import CppWrapperGpu
from torch._inductor.codegen.cuda.device_op_overrides import CUDADeviceOpOverrides


class NpuDeviceOpOverrides(CUDADeviceOpOverrides):  # type: ignore[misc]
    """Python-wrapper snippets for "npu": the provider's raw-stream getter, and ``torch.npu``'s device API
    (torch_npu's ``torch.npu.set_device`` / ``synchronize`` / ``device``) in place of ``torch.cuda``'s."""

    def __init__(self, raw_stream_import: str) -> None:
        super().__init__()
        self._raw_stream_import = raw_stream_import

    def import_get_raw_stream_as(self, name: str) -> str:
        return self._raw_stream_import.format(name=name)

    def set_device(self, device_idx: int) -> str:
        return f"torch.npu.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.npu.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.npu.device({device_idx})"

    def cpp_aoti_device_guard(self) -> str:
        return "npu_inductor_compat_rt::DeviceGuard"  # defined by the NPU C++ wrapper's prelude (npu_launch.py)


class NpuCppWrapperPending(CppWrapperGpu):  # type: ignore[misc]
    """Registered for "npu" until fix ``cpp-wrapper-workspace-locks`` puts this package's NPU C++ wrapper in its
    place: upstream's GPU C++ wrapper would emit CUDA driver calls for an NPU, and Inductor's own failure is a bare
    "Device npu not supported" assertion."""

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "npu_inductor_compat: cpp_wrapper=True for device 'npu' needs fix 'cpp-wrapper-workspace-locks' (this "
            "package's NPU C++ wrapper), which is disabled (NPU_INDUCTOR_COMPAT_DISABLE, disable=, or codegen "
            "--without-fix); use cpp_wrapper=False or enable the fix"
        )


def default_codegen_classes() -> tuple[type, type, type]:
    """(scheduling, Python wrapper, C++ wrapper) for "npu" when the provider brings none."""
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    return TritonScheduling, PythonWrapperCodegen, NpuCppWrapperPending
