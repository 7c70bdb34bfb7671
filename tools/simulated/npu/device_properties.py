"""The Ascend SoC the simulated NPU reports, and the device properties it reports for it (torch_npu's fields)."""

# As on hardware, whatever Inductor derives from the "SM count" follows the SoC: torch_npu reports the vector core
# count there and leaves the CUDA-only fields (``major``, ``warp_size``, ...) None. :func:`use_soc` selects the SoC
# (default ``soc.DEFAULT_SOC``; the codegen CLI's ``--soc``).

from __future__ import annotations

import dataclasses
import sys
import threading

from npu_inductor_compat.tools.simulated.npu.soc import DEFAULT_SOC, Soc, get_soc

__all__ = ["SimulatedNpuProperties", "SimulatedUuid", "current_properties", "current_soc", "use_soc"]


@dataclasses.dataclass(frozen=True)
class SimulatedUuid:
    """torch_npu's ``_CUuuid``: 16 bytes, printed 8-4-4-4-12. torch_npu leaves it zero where the runtime cannot
    report one (torch_npu/csrc/npu/Module.cpp, ``aclrtUuid uuid = {0}``); the simulated device has none."""

    bytes: tuple[int, ...] = (0,) * 16

    def __str__(self) -> str:
        text = "".join(f"{b:02x}" for b in self.bytes)
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclasses.dataclass(frozen=True)
class SimulatedNpuProperties:
    """What ``torch.npu.get_device_properties()`` returns on the simulated NPU: exactly the fields of torch_npu's
    ``_NPUDeviceProperties`` (torch_npu/csrc/npu/Module.cpp ``RegisterNPUDeviceProperties``), valued as torch_npu
    values them (``initDeviceProperty``) for the selected SoC.

    torch_npu sets ``multi_processor_count`` to the vector core count (the cube core count when there are no vector
    cores) and leaves every other CUDA-shaped field unset (``std::optional``: None in Python): there is no CUDA
    compute capability, warp size, register file or thread limit to report. Inductor reads those with fallbacks
    (a None ``warp_size`` counts as 32, None register counts skip its occupancy check).
    """

    name: str
    total_memory: int
    cube_core_num: int
    vector_core_num: int
    L2_cache_size: int
    multi_processor_count: int
    major: int | None = None
    minor: int | None = None
    is_multi_gpu_board: int | None = None
    is_integrated: int | None = None
    max_threads_per_multi_processor: int | None = None
    warp_size: int | None = None
    regs_per_multiprocessor: int | None = None
    gcnArchName: str | None = None
    uuid: SimulatedUuid = dataclasses.field(default_factory=SimulatedUuid)

    @classmethod
    def of(cls, soc: Soc) -> SimulatedNpuProperties:
        # torch_npu/csrc/npu/Module.cpp initDeviceProperty: multi_processor_count = vector_core_num when > 0, else
        # cube_core_num ("for compatibility with DataParallel balance check"); torch_npu/_inductor/runtime/hints.py
        # NPUDeviceProperties.create likewise gives Inductor vector_core_num as the SM count.
        count = soc.vector_core_num if soc.vector_core_num > 0 else soc.cube_core_num
        return cls(
            name=soc.name,
            total_memory=soc.total_memory,
            cube_core_num=soc.cube_core_num,
            vector_core_num=soc.vector_core_num,
            L2_cache_size=soc.l2_cache_size,
            multi_processor_count=count,
        )

    def __repr__(self) -> str:  # torch_npu's layout (sizes in MB), named as what it is
        return (
            f"SimulatedNpuProperties(name={self.name!r}, total_memory={self.total_memory // 1024**2}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, uuid={self.uuid}, "
            f"L2_cache_size={self.L2_cache_size // 1024**2}MB)"
        )


_lock = threading.Lock()
_soc: Soc = get_soc(DEFAULT_SOC)
_properties: dict[str, SimulatedNpuProperties] = {}


def use_soc(name: str) -> str:
    """Make the simulated NPU report the Ascend SoC ``name`` (see ``soc.SOCS``; ValueError naming the valid ones);
    returns the name of the SoC it reported before.

    Select it before compiling: graphs already compiled keep the properties they were generated with. A switch
    clears Inductor's cache of device properties (``DeviceProperties.create``) so the next graph sees the new SoC.
    """
    global _soc
    chosen = get_soc(name)
    with _lock:
        previous, _soc = _soc, chosen
    if previous is not chosen:
        hints = sys.modules.get("torch._inductor.runtime.hints")
        create = getattr(getattr(hints, "DeviceProperties", None), "create", None)
        if create is not None and hasattr(create, "cache_clear"):
            create.cache_clear()
    return previous.name


def current_soc() -> Soc:
    """The Ascend SoC the simulated NPU reports."""
    return _soc


def current_properties() -> SimulatedNpuProperties:
    """The properties of the SoC the simulated NPU reports (one object per SoC)."""
    soc = _soc
    found = _properties.get(soc.name)
    if found is None:
        found = _properties.setdefault(soc.name, SimulatedNpuProperties.of(soc))
    return found
