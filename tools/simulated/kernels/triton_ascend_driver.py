"""triton-ascend's active NPU driver, for torch_npu code that asks ``triton.runtime.driver.active`` at import:
target, device and core counts answered from the simulated SoC; what needs CANN (launch, streams) raises."""

# Modelled on triton-ascend 3.2.0 triton/backends/ascend/driver.py (NPUDriver, NPUUtils) and npu_utils.cpp, whose
# get_arch and get_aicore_num ask the runtime (rtGetSocVersion, rtGetAiCoreCount). The _inductor/config.py of
# torch_npu 2.8.0.post5 and 2.9.1 reads target, device and ``num_aicore`` from it at import. The provider sets it
# active on the process's triton.runtime.driver while torch_npu runs, and restores the driver's state after.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.tools.simulated.npu.not_simulated import NotSimulatedError

SOURCE = "triton-ascend 3.2.0 triton/backends/ascend/driver.py NPUDriver, NPUUtils (npu_utils.cpp)"


class NeedsAnNpu(NotSimulatedError):
    """A driver call that needs CANN and a device (a launch, a stream, a kernel binary)."""


def _needs_npu(what: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise NeedsAnNpu(f"triton-ascend's NPUDriver.{what} was called: it needs CANN and an NPU ({SOURCE})")

    call.__name__ = call.__qualname__ = what
    return call


class NpuUtils:
    """NPUUtils without its native module: the arch and AI core count of the simulated SoC (rtGetSocVersion,
    rtGetAiCoreCount); the vector cores are twice the AI cores, as NPUUtils.get_device_properties computes them."""

    load_binary = staticmethod(_needs_npu("utils.load_binary"))
    set_device_limit = staticmethod(_needs_npu("utils.set_device_limit"))

    def get_arch(self) -> str:
        from npu_inductor_compat.tools.simulated.npu.device_properties import current_soc

        return current_soc().name

    def get_aicore_num(self) -> int:
        from npu_inductor_compat.tools.simulated.npu.device_properties import current_soc

        return current_soc().cube_core_num

    def get_device_properties(self, device: Any) -> dict[str, int]:
        aicore = self.get_aicore_num()
        # "max_shared_mem" is a placeholder in triton-ascend too (its comment: to keep the compiler quiet)
        return {"max_shared_mem": 1, "num_aicore": aicore, "num_vectorcore": aicore * 2}

    def get_aivector_core_num(self) -> int:
        return self.get_device_properties("npu")["num_vectorcore"]


class NpuDriver:
    """NPUDriver: the target ("npu", the arch: TRITON_ASCEND_ARCH, else the SoC's, warp size 0), the device
    through torch.npu (the simulated device module); launching, streams and benchmarking need an NPU."""

    get_current_stream = staticmethod(_needs_npu("get_current_stream"))
    get_benchmarker = staticmethod(_needs_npu("get_benchmarker"))
    get_empty_cache_for_benchmark = staticmethod(_needs_npu("get_empty_cache_for_benchmark"))
    launcher_cls = staticmethod(_needs_npu("launcher_cls"))

    def __init__(self, arch_from_env: Any) -> None:
        self.utils = NpuUtils()
        self._arch_from_env = arch_from_env  # the stub of triton-ascend's utils.get_ascend_arch_from_env

    @classmethod
    def is_active(cls) -> bool:
        return True  # what NPUDriver answers where its compiler (bisheng) targets hiipu64

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("npu", self._arch_from_env() or self.utils.get_arch(), 0)

    def get_current_device(self) -> int:
        import torch

        return int(torch.npu.current_device())

    def set_current_device(self, device: int) -> None:
        import torch

        torch.npu.set_device(device)

    def get_device_interface(self) -> Any:
        import torch

        return torch.npu


def activate(driver: NpuDriver) -> Callable[[], None]:
    """Set ``driver`` active on this process's ``triton.runtime.driver``; returns what restores its state exactly
    (``reset_active`` would not: in triton 3.5 it creates the default driver, and none is active here)."""
    from triton.runtime.driver import driver as config

    before = dict(vars(config))
    config.set_active(driver)

    def restore() -> None:
        vars(config).clear()
        vars(config).update(before)

    return restore
