"""Ascend SoCs the simulated NPU can report, and where every number comes from."""

# Importing this module imports nothing else of this package, and nothing of torch.

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SOC", "SOCS", "Soc", "get_soc"]

# The runtime answers torch_npu's device queries (see :class:`Soc`) from CANN's per-SoC platform configuration,
# ``<arch>-linux/data/platform_config/<SoC>.ini``; CANN publishes those files in its runtime repository
# (github.com/hicann/runtime, ``src/platform/platform_config/cann/<SoC>.ini``), which is where the numbers of SOCS
# were read: the published platform configuration they come from (repository, path, commit).
CANN_PLATFORM_CONFIG = "github.com/hicann/runtime src/platform/platform_config/cann/{name}.ini (commit 681ef761)"
# ``soc_version`` is torch_npu's own number for the SoC (``torch_npu/csrc/core/npu/NpuVariables.h``, enum
# ``SocVersion``), what ``torch.npu.get_soc_version()`` returns and what torch_npu's rules compare against (bf16
# support, "910B and newer" checks in its Inductor code).
TORCH_NPU_SOC_VERSIONS = "torch_npu torch_npu/csrc/core/npu/NpuVariables.h (enum SocVersion)"
TOTAL_MEMORY_NOTE = (
    "total_memory is the ini's nominal HBM size (memory_size); torch_npu reads the device's own total at run time "
    "(aclrtGetMemInfo), which on real hardware is somewhat less"
)


@dataclass(frozen=True)
class Soc:
    """One Ascend SoC as torch_npu reports it (sizes in bytes).

    torch_npu fills ``torch.npu.get_device_properties()`` at run time from the device
    (``torch_npu/csrc/npu/Module.cpp`` ``initDeviceProperty``): the SoC name from ``aclrtGetSocName``, the cube (AI)
    core and vector core counts from ``aclGetDeviceCapability(ACL_DEVICE_INFO_AI_CORE_NUM /
    ACL_DEVICE_INFO_VECTOR_CORE_NUM)``, the L2 size from ``ACL_DEVICE_INFO_L2_SIZE`` and the total memory from
    ``aclrtGetMemInfo`` (or ``ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE`` on CANN >= 9.0.0.beta2).
    """

    name: str  # aclrtGetSocName: torch.npu.get_device_name() and get_device_properties().name
    short_name: str  # the SoC family (Short_SoC_version), e.g. "Ascend910B"
    soc_version: int  # torch_npu's SocVersion number (torch.npu.get_soc_version())
    cube_core_num: int  # AI cores (ai_core_cnt): get_device_properties().cube_core_num
    vector_core_num: int  # vector cores (vector_core_cnt): get_device_properties().vector_core_num
    l2_cache_size: int  # l2_size: get_device_properties().L2_cache_size
    total_memory: int  # memory_size: get_device_properties().total_memory (see TOTAL_MEMORY_NOTE)
    ub_size: int  # unified buffer per core ([AICoreSpec] ub_size); not a torch_npu property, used by its kernels
    source: str  # where each number comes from


def _soc(
    name: str,
    short_name: str,
    soc_version: int,
    *,
    cube: int,
    vector: int,
    l2: int,
    memory: int,
    ub: int,
    note: str = "",
) -> Soc:
    """A table entry whose ``source`` quotes the very values it holds, so the citation cannot drift from the data."""
    ini = CANN_PLATFORM_CONFIG.format(name=name)
    source = (
        f"cube_core_num, vector_core_num, L2_cache_size, total_memory, ub_size: CANN platform config {name}.ini, "
        f"[SoCInfo] ai_core_cnt={cube}, vector_core_cnt={vector}, l2_size={l2}, memory_size={memory}; "
        f"[AICoreSpec] ub_size={ub} ({ini}); {TOTAL_MEMORY_NOTE}. "
        f"soc_version={soc_version}: {TORCH_NPU_SOC_VERSIONS}."
    )
    return Soc(name, short_name, soc_version, cube, vector, l2, memory, ub, source + (f" {note}" if note else ""))


_GiB = 1024**3
_MiB = 1024**2

# Ascend910B3 is the default: it is the part torch_npu's own Inductor code falls back to when it cannot ask the
# device (torch_npu/_inductor/triton_experimental/device_props.py get_npu_vector_core_count: "falls back to 40
# (Ascend910B3)"), and the target this package's kernel check lowers for (tools/simulated/kernels/kernel_lowering.py).
DEFAULT_SOC = "Ascend910B3"

SOCS: dict[str, Soc] = {
    soc.name: soc
    for soc in (
        # Atlas A2 training series (910B): 1 cube core and 2 vector cores per AI core ("cube_vector_combine=split").
        _soc("Ascend910B1", "Ascend910B", 220, cube=24, vector=48, l2=192 * _MiB, memory=64 * _GiB, ub=192 * 1024),
        _soc("Ascend910B2", "Ascend910B", 221, cube=24, vector=48, l2=192 * _MiB, memory=64 * _GiB, ub=192 * 1024),
        _soc("Ascend910B3", "Ascend910B", 223, cube=20, vector=40, l2=192 * _MiB, memory=64 * _GiB, ub=192 * 1024),
        _soc("Ascend910B4", "Ascend910B", 224, cube=20, vector=40, l2=96 * _MiB, memory=32 * _GiB, ub=192 * 1024),
        # Atlas A3 (910_93): torch_npu sees each die as one device; these are per device.
        _soc(
            "Ascend910_9391",
            "Ascend910_93",
            250,
            cube=24,
            vector=48,
            l2=192 * _MiB,
            memory=64 * _GiB,
            ub=192 * 1024,
            note="Atlas A3: one die per torch_npu device.",
        ),
        _soc(
            "Ascend910_9392",
            "Ascend910_93",
            251,
            cube=24,
            vector=48,
            l2=192 * _MiB,
            memory=64 * _GiB,
            ub=192 * 1024,
            note="Atlas A3: one die per torch_npu device.",
        ),
        # Atlas inference series (310P): AI cores and separate vector cores; no bf16 (torch_npu: soc < Ascend910B1).
        _soc(
            "Ascend310P3",
            "Ascend310P",
            202,
            cube=8,
            vector=7,
            l2=16 * _MiB,
            memory=24_000_000_000,
            ub=256 * 1024,
            note="The ini has no cube_core_cnt: torch_npu's cube_core_num is the AI core count (ai_core_cnt).",
        ),
    )
}


def get_soc(name: str) -> Soc:
    """The SoC called ``name`` (case-insensitive); ValueError naming it and the valid names otherwise."""
    if isinstance(name, str):
        for soc in SOCS.values():
            if soc.name.lower() == name.strip().lower():
                return soc
    raise ValueError(
        f"unknown Ascend SoC {name!r} for the simulated NPU; valid: {', '.join(sorted(SOCS))} (default {DEFAULT_SOC})"
    )
