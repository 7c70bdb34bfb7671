"""The C++ wrapper the simulated NPU generates: upstream's GPU C++ wrapper, with its launch code marked for what it is.

Codegen only. It shows the C++ Inductor produces for device "npu" (argument handling, symbolic grids, memory
planning) on every torch line; the kernel launch lines are upstream's CUDA-driver ones until this package's NPU C++
wrapper (ACL launches, workspace and sync-block locks) replaces them.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.codegen.cpp_wrapper_gpu import CppWrapperGpu

BANNER = (
    '// Generated for device "npu" by npu_inductor_compat\'s simulated NPU (codegen only).\n'
    "// Kernel launch lines below are upstream's GPU C++ wrapper (CUDA driver API): the NPU (ACL) launch is not\n"
    "// generated yet. Everything else is what Inductor emits for this graph.\n"
)


class SimulatedNpuCppWrapper(CppWrapperGpu):  # type: ignore[misc]
    @staticmethod
    def create(*args: Any, **kwargs: Any) -> Any:
        return SimulatedNpuCppWrapper()

    def write_header(self) -> None:
        super().write_header()
        self.header.splice(BANNER)
