"""The Ascend SoCs the simulated NPU reports (tools/simulated/npu/soc.py) and how the device derives its properties
from them (tools/simulated/npu/device*.py, in this process: nothing here sets the device up)."""

# Where their sources are at hand, the numbers are checked against them: CANN's platform config files
# (``$NPU_INDUCTOR_COMPAT_PLATFORM_CONFIG``, a folder of ``<SoC>.ini``, or ``$ASCEND_HOME_PATH/*/data/platform_config``)
# and torch_npu's ``NpuVariables.h`` (from the torch_npu headers this package caches for its header check, an installed
# torch_npu, or ``$NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE``).

from __future__ import annotations

import configparser
import dataclasses
import importlib.util
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.tools.simulated.npu import soc as socs
from npu_inductor_compat.tools.simulated.npu.soc import DEFAULT_SOC, SOCS, Soc, get_soc

# the SoC table and the properties the simulated device reports from it: nothing here depends on torch's Inductor
pytestmark = pytest.mark.once

PLATFORM_CONFIG_ENV = "NPU_INDUCTOR_COMPAT_PLATFORM_CONFIG"


# ------------------------------------------------------------------------------------------------ the table
def test_names_are_matched_case_insensitively_to_the_table_entry() -> None:
    for name, entry in SOCS.items():
        assert get_soc(name) is entry
        assert get_soc(f"  {name.upper()} ") is entry
        assert get_soc(name.lower()) is entry


@pytest.mark.parametrize("bad", ["Ascend910", "A100", "", "Ascend910B3x"])
def test_an_unknown_name_is_refused_naming_it_and_every_valid_name(bad: str) -> None:
    with pytest.raises(ValueError) as caught:
        get_soc(bad)
    message = str(caught.value)
    assert repr(bad) in message
    assert all(name in message for name in SOCS)


def test_the_default_is_in_the_table_and_the_table_has_training_a3_and_inference_parts() -> None:
    assert DEFAULT_SOC in SOCS
    families = {entry.short_name for entry in SOCS.values()}
    assert {"Ascend910B", "Ascend910_93", "Ascend310P"} <= families
    assert sum(entry.short_name == "Ascend910B" for entry in SOCS.values()) >= 2


def test_entries_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SOCS[DEFAULT_SOC].vector_core_num = 1  # type: ignore[misc]


def test_every_source_names_its_platform_config_file_and_torch_npus_soc_versions() -> None:
    for entry in SOCS.values():
        assert f"{entry.name}.ini" in entry.source
        assert "github.com/hicann/runtime" in entry.source
        assert "NpuVariables.h" in entry.source
        # the values quoted are the values held
        assert f"ai_core_cnt={entry.cube_core_num}," in entry.source
        assert f"vector_core_cnt={entry.vector_core_num}," in entry.source
        assert f"memory_size={entry.total_memory}" in entry.source


def _platform_config_dirs() -> list[Path]:
    found = []
    explicit = os.environ.get(PLATFORM_CONFIG_ENV)
    if explicit:
        found.append(Path(explicit))
    home = os.environ.get("ASCEND_HOME_PATH")
    if home:
        found += sorted(Path(home).glob("*/data/platform_config"))
    return [folder for folder in found if folder.is_dir()]


def _ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, inline_comment_prefixes=("#",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(path)
    return parser


def test_the_numbers_are_cann_platform_configs() -> None:
    folders = _platform_config_dirs()
    if not folders:
        pytest.skip(f"no CANN platform config here (set {PLATFORM_CONFIG_ENV} or ASCEND_HOME_PATH)")
    checked = 0
    for entry in SOCS.values():
        paths = [folder / f"{entry.name}.ini" for folder in folders if (folder / f"{entry.name}.ini").is_file()]
        if not paths:
            continue
        path = paths[0]
        ini = _ini(path)
        info, core = ini["SoCInfo"], ini["AICoreSpec"]
        assert ini["version"]["SoC_version"] == entry.name
        assert ini["version"]["Short_SoC_version"] == entry.short_name
        assert int(info["ai_core_cnt"]) == entry.cube_core_num, entry.name
        assert int(info["vector_core_cnt"]) == entry.vector_core_num, entry.name
        assert int(info["l2_size"]) == entry.l2_cache_size, entry.name
        assert int(info["memory_size"]) == entry.total_memory, entry.name
        assert int(core["ub_size"]) == entry.ub_size, entry.name
        checked += 1
    assert checked, f"none of {sorted(SOCS)} in {folders}"


def _npu_variables_headers() -> list[Path]:
    roots: list[Path] = []
    explicit = os.environ.get("NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE")
    if explicit:
        roots.append(Path(explicit))
    try:
        spec = importlib.util.find_spec("torch_npu")  # located, never imported
    except (ImportError, ValueError):
        spec = None
    roots += [Path(location) / "include" for location in (spec.submodule_search_locations or [])] if spec else []
    from npu_inductor_compat.tools import wheel_cache

    roots += sorted((wheel_cache.default_cache_dir().parent / "torch_npu_include").glob("*"))
    headers = [root / "torch_npu/csrc/core/npu/NpuVariables.h" for root in roots]
    return [header for header in headers if header.is_file()]


def _soc_version_enum(header: Path) -> dict[str, int]:
    body = re.search(r"enum class SocVersion\s*{(.*?)}", header.read_text(), re.S)
    assert body is not None, header
    values: dict[str, int] = {}
    number = -1
    for item in body.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = (part.strip() for part in item.partition("="))
        number = int(value) if value else number + 1
        values[name] = number
    return values


@pytest.mark.download
def test_soc_versions_are_torch_npus() -> None:
    """Every SoC's number is the one torch_npu's own ``SocVersion`` enum gives it, in every torch_npu header tree at
    hand; with none at hand, the newest paired release's headers are fetched (a download test)."""
    headers = _npu_variables_headers()
    if not headers:
        from npu_inductor_compat.tools.simulated.codegen import headers as header_check
        from npu_inductor_compat.tools.simulated.wheel.pairs import PAIRS

        try:
            (source,) = header_check.torch_npu_headers(PAIRS[-1].torch)
        except header_check.HeaderCheckUnavailable as err:
            pytest.skip(f"torch_npu headers unavailable: {err}")
        headers = _npu_variables_headers()
        assert headers, f"{source.description}: fetched into {source.include}, yet no NpuVariables.h is found there"
    for header in headers:
        enum = _soc_version_enum(header)
        for entry in SOCS.values():
            assert enum[entry.name.replace("-", "_")] == entry.soc_version, (header, entry.name)


# ------------------------------------------------------------------------------------------------ the device
@pytest.fixture
def device() -> Iterator[Any]:
    """device.py, with the SoC it reported restored afterwards (nothing is set up: device index 0 is given)."""
    from npu_inductor_compat.tools.simulated.npu import device as module

    before = module.current_soc().name
    yield module
    module.use_soc(before)


def test_use_soc_selects_returns_the_previous_and_refuses_unknown_names_unchanged(device: Any) -> None:
    module = device
    start = module.current_soc()
    other = next(entry for entry in SOCS.values() if entry.name != start.name)
    assert module.use_soc(other.name.lower()) == start.name
    assert module.current_soc() is other
    with pytest.raises(ValueError, match="Nvidia"):
        module.use_soc("Nvidia")
    assert module.current_soc() is other
    assert module.use_soc(start.name) == other.name


# torch_npu/csrc/npu/Module.cpp RegisterNPUDeviceProperties: the fields of _NPUDeviceProperties.
TORCH_NPU_PROPERTY_FIELDS = {
    "name",
    "total_memory",
    "cube_core_num",
    "vector_core_num",
    "L2_cache_size",
    "major",
    "minor",
    "is_multi_gpu_board",
    "is_integrated",
    "multi_processor_count",
    "max_threads_per_multi_processor",
    "warp_size",
    "regs_per_multiprocessor",
    "gcnArchName",
    "uuid",
}
CUDA_ONLY_FIELDS = TORCH_NPU_PROPERTY_FIELDS - {
    "name",
    "total_memory",
    "cube_core_num",
    "vector_core_num",
    "L2_cache_size",
    "multi_processor_count",
    "uuid",
}


@pytest.mark.parametrize("name", sorted(SOCS))
def test_properties_are_torch_npus_fields_valued_from_the_selected_soc(device: Any, name: str) -> None:
    from npu_inductor_compat.tools.simulated.npu import device_api, device_memory

    device.use_soc(name)
    entry = get_soc(name)
    props = device_api.get_device_properties(0)
    assert {f.name for f in dataclasses.fields(props)} == TORCH_NPU_PROPERTY_FIELDS
    assert (props.name, props.total_memory) == (entry.name, entry.total_memory)
    assert props.L2_cache_size == entry.l2_cache_size
    assert (props.cube_core_num, props.vector_core_num) == (entry.cube_core_num, entry.vector_core_num)
    # torch_npu: the SM count is the vector core count; nothing CUDA-shaped is reported
    assert props.multi_processor_count == entry.vector_core_num
    assert all(getattr(props, field) is None for field in CUDA_ONLY_FIELDS)
    assert str(props.uuid) == "00000000-0000-0000-0000-000000000000"
    assert f"vector_core_num={entry.vector_core_num}" in repr(props)
    assert device_api.get_device_name(0) == entry.name
    assert device_api.get_soc_version() == entry.soc_version
    assert device_memory.mem_get_info(0)[1] == entry.total_memory


def test_bf16_follows_torch_npus_soc_rule(device: Any) -> None:
    """torch_npu NpuVariables.cpp IsBF16Supported: SocVersion >= Ascend910B1 (so not the 310P inference parts)."""
    import torch

    from npu_inductor_compat.tools.simulated.npu import device_api

    first_910b = get_soc("Ascend910B1").soc_version
    seen = set()
    for entry in SOCS.values():
        device.use_soc(entry.name)
        supported = device_api.is_bf16_supported()
        assert supported == (entry.soc_version >= first_910b), entry.name
        assert (torch.bfloat16 in device_api.get_amp_supported_dtype()) == supported
        seen.add(supported)
    assert seen == {True, False}


def test_device_capability_is_none_unless_torch_npus_variable_sets_it(
    device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from npu_inductor_compat.tools.simulated.npu import device_api as module

    monkeypatch.delenv(module.CAPABILITY_ENV, raising=False)
    with pytest.warns(UserWarning, match="no CUDA capability"):
        assert module.get_device_capability(0) is None
    monkeypatch.setenv(module.CAPABILITY_ENV, "8.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert module.get_device_capability(0) == (8, 0)
    monkeypatch.setenv(module.CAPABILITY_ENV, "eight")
    with pytest.warns(UserWarning, match="'eight' is not 'major.minor'"):
        assert module.get_device_capability(0) is None


def test_the_dynamo_interface_reports_the_soc_name_and_its_vector_cores(device: Any) -> None:
    """torch_npu/utils/_dynamo_device.py: get_compute_capability is the chip name, the SM count its vector cores."""
    module = device
    interface = module.SimulatedNpuInterface
    for entry in SOCS.values():
        module.use_soc(entry.name)
        assert interface.get_compute_capability(0) == entry.name
        assert interface.get_multi_processor_count(0) == entry.vector_core_num
        assert interface.get_cache_system_info()["name"] == entry.name


def test_soc_module_imports_nothing_of_torch() -> None:
    source = Path(socs.__file__).read_text()
    assert not re.search(r"^\s*(import|from)\s+(torch|npu_inductor_compat)", source, re.M)
    assert isinstance(SOCS[DEFAULT_SOC], Soc)
