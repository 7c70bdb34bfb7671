"""Kernel launch metadata (common/device/kernel_metadata.py): both metadata shapes, defaults, the sizes derived from it,
and fuzzing: wrong types, negatives and huge values are clear errors, never values."""

from __future__ import annotations

import re
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_inductor_compat.common.device.kernel_metadata import (
    LIMITS,
    MODE,
    KernelLaunchMetadata,
    KernelMetadataError,
    read_launch_metadata,
)

FULL = {
    "workspace_size": 512,
    "lock_num": 0,
    "sync_block_lock_layout": (2 << 32) | 3,
    "lock_init_val": 1,
    "mix_mode": "mix",
    "auto_tile_and_bind_subblock": True,
    "force_simt_only": False,
}


@pytest.mark.parametrize("shape", ["dict", "object"])
def test_object_and_dict_metadata_read_the_same(shape: str) -> None:
    metadata: Any = dict(FULL) if shape == "dict" else types.SimpleNamespace(**FULL)
    found = read_launch_metadata("k", metadata)
    assert found == KernelLaunchMetadata(kernel="k", **FULL)
    assert (found.ordered_locks, found.unordered_locks) == (3, 2)


def test_absent_fields_default_to_zero_and_false() -> None:
    assert read_launch_metadata("k", {}) == KernelLaunchMetadata(kernel="k")
    assert read_launch_metadata("k", types.SimpleNamespace(name="k")) == KernelLaunchMetadata(kernel="k")


def test_lock_init_value_is_the_fallback_name() -> None:
    assert read_launch_metadata("k", {"lock_init_value": 7}).lock_init_val == 7
    assert read_launch_metadata("k", {"lock_init_val": 2, "lock_init_value": 7}).lock_init_val == 2


def test_lock_and_workspace_sizes() -> None:
    legacy = read_launch_metadata("k", {"lock_num": 5, "workspace_size": 128})
    assert legacy.lock_bytes(blocks=40) == 5 * 8
    assert legacy.workspace_bytes((4, 2, 3)) == 128 * 24
    packed = read_launch_metadata("k", FULL)
    # 3 ordered locks (1 line each) + 2 unordered locks of (1 + 2 * participants) lines, participants = 2 * blocks
    assert packed.lock_bytes(blocks=10) == (3 + 2 * (1 + 2 * 20)) * 64
    not_mix = read_launch_metadata("k", {**FULL, "mix_mode": "aiv"})
    assert not_mix.lock_bytes(blocks=10) == (3 + 2 * (1 + 2 * 10)) * 64
    simt = read_launch_metadata("k", {**FULL, "force_simt_only": True})
    assert (simt.lock_bytes(10), simt.workspace_bytes((1, 1, 1)), simt.uses_locks, simt.uses_workspace) == (
        0,
        0,
        False,
        False,
    )


INTEGER_FIELDS = sorted(LIMITS)
bad_integers = st.one_of(
    st.integers(max_value=-1),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.just(b"1"),
)


@given(field=st.sampled_from(INTEGER_FIELDS), value=bad_integers, as_object=st.booleans())
def test_bad_integer_fields_are_clear_errors(field: str, value: Any, as_object: bool) -> None:
    metadata: Any = {field: value}
    if as_object:
        metadata = types.SimpleNamespace(**metadata)
    with pytest.raises(KernelMetadataError) as caught:
        read_launch_metadata("triton_poi_fused_0", metadata)
    assert "triton_poi_fused_0" in str(caught.value) and repr(field) in str(caught.value)


@given(field=st.sampled_from(INTEGER_FIELDS), excess=st.integers(min_value=0, max_value=1 << 70))
def test_huge_values_are_out_of_range(field: str, excess: int) -> None:
    with pytest.raises(KernelMetadataError, match="out of range"):
        read_launch_metadata("k", {field: LIMITS[field] + excess})


@given(field=st.sampled_from(INTEGER_FIELDS), value=st.integers(min_value=0, max_value=(1 << 31) - 1))
def test_in_range_integers_are_kept_exactly(field: str, value: int) -> None:
    assert getattr(read_launch_metadata("k", {field: value}), field) == value


@given(
    field=st.sampled_from(["auto_tile_and_bind_subblock", "force_simt_only"]),
    value=st.one_of(st.integers(), st.text(max_size=3), st.floats()),
)
def test_flags_must_be_bools(field: str, value: Any) -> None:
    with pytest.raises(KernelMetadataError, match=f"'{field}' must be a bool"):
        read_launch_metadata("k", {field: value})


SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@pytest.mark.parametrize("mode", ["", "aiv", "aic", "mix", "_", "mix_v2"])
def test_known_mix_modes_are_kept(mode: str) -> None:
    assert read_launch_metadata("k", {"mix_mode": mode}).mix_mode == mode


@given(mode=st.text(max_size=12))
def test_mix_mode_is_an_identifier_or_an_error(mode: str) -> None:
    """Only C++-string-safe identifiers pass (mix_mode is printed as a string literal)."""
    if mode == "" or (set(mode) <= SAFE and not mode[0].isdigit()):
        assert read_launch_metadata("k", {"mix_mode": mode}).mix_mode == mode
    else:
        with pytest.raises(KernelMetadataError, match="'mix_mode' must be an identifier"):
            read_launch_metadata("k", {"mix_mode": mode})


@pytest.mark.parametrize("mode", ["mix\n", "A\n", "aiv ", "mi-x", '"mix"', "3mix", "mix\\n"])
def test_mix_modes_that_would_break_a_cpp_string_literal_are_rejected(mode: str) -> None:
    with pytest.raises(KernelMetadataError, match="'mix_mode' must be an identifier"):
        read_launch_metadata("k", {"mix_mode": mode})


anything = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70), st.text(max_size=8)
)


@given(fields=st.dictionaries(st.sampled_from([*INTEGER_FIELDS, "mix_mode", "force_simt_only"]), anything))
def test_whatever_the_metadata_the_launch_text_only_carries_validated_values(fields: dict[str, Any]) -> None:
    """Fuzzed metadata either fails validation or renders a launch whose every number came from a validated field
    (the renderer is fed only KernelLaunchMetadata; this checks nothing else leaks into the C++)."""
    from npu_inductor_compat.common.device.npu_launch import render_launch

    try:
        meta = read_launch_metadata("k", fields)
    except KernelMetadataError:
        return
    text = render_launch(meta, "k", [])
    allowed = {str(value) for value in (meta.workspace_size, meta.lock_num, meta.lock_init_val)}
    allowed |= {str(meta.shared_mem_dynamic_size)}
    allowed |= {str(meta.ordered_locks * 8), str(meta.unordered_locks), str(meta.participants(1))}
    allowed |= {"0", "1", "2", "4", "8", "32"}  # the template's own constants (grid axes, alignments, int32_t)
    literals = set(re.findall(r"(?<![\w.])(\d+)(?:ULL|LL)?\b", text.split("\n", 1)[1]))  # past the comment line
    assert literals <= allowed, literals - allowed
    if meta.mix_mode:
        assert MODE.fullmatch(meta.mix_mode)


class _Hostile(str):
    def __format__(self, spec: str) -> str:
        return "aiv\n#error injected"

    def __str__(self) -> str:
        return "aiv\n#error injected"


class _HostileInt(int):
    def __format__(self, spec: str) -> str:
        return '1; system("x")'

    def __lt__(self, other: Any) -> bool:
        return True


def test_subclasses_reach_the_launch_text_as_plain_values() -> None:
    """A str or int subclass passes the type checks, but its own formatting never reaches the C++."""
    from npu_inductor_compat.common.device.npu_launch import render_launch

    meta = read_launch_metadata("k", {"mix_mode": _Hostile("aiv"), "workspace_size": _HostileInt(64)})
    assert type(meta.mix_mode) is str and type(meta.workspace_size) is int
    text = render_launch(meta, "k", [])
    assert "#error" not in text and "system" not in text and "mul(64ULL" in text


def test_simt_fields_under_every_released_name() -> None:
    pure = read_launch_metadata("k", {"is_pure_simt": True, "shared_mem_dynamic_size": 122880, "lock_num": 2})
    old = read_launch_metadata("k", {"force_simt_only": True, "shared_mem_dynamic_size": 1, "workspace_size": 8})
    for meta in (pure, old):
        assert meta.pure_simt and meta.simt and not meta.uses_locks and not meta.uses_workspace
    mixed = read_launch_metadata("k", {"parallel_mode": "simt", "shared_mem_dynamic_size": 4096, "lock_num": 1})
    assert mixed.simt and not mixed.pure_simt and mixed.uses_locks
    assert not read_launch_metadata("k", {"parallel_mode": "simd"}).simt


@pytest.mark.parametrize("fields", [{"is_pure_simt": True}, {"force_simt_only": True}, {"parallel_mode": "simt"}])
def test_a_simt_kernel_without_a_recorded_size_gets_what_its_launcher_used(fields: dict[str, Any]) -> None:
    """triton-ascend 3.2.0 records no size and launches SIMT kernels compiled for 910_95 with 216 KiB; a non-SIMT
    kernel gets none."""
    on_910_95 = read_launch_metadata("k", {**fields, "compile_on_910_95": True})
    assert on_910_95.dynamic_unified_buffer and on_910_95.shared_mem_dynamic_size == 216 * 1024
    assert read_launch_metadata("k", {"parallel_mode": "simd", "compile_on_910_95": True}).shared_mem_dynamic_size == 0


@pytest.mark.parametrize(
    "fields", [{"is_pure_simt": True}, {"parallel_mode": "mix_simd_simt"}, {"parallel_mode": "simd"}]
)
@pytest.mark.parametrize("on_910_95", [True, False, None])
def test_only_simt_kernels_compiled_for_910_95_get_a_dynamic_unified_buffer(
    fields: dict[str, Any], on_910_95: bool | None
) -> None:
    """triton-ascend's launcher (3.2.0 and main: ``if compile_on_910_95 and enable_simt``): both, or no launch
    attribute; metadata without the flag was compiled for another SoC (3.2.0's default is False)."""
    metadata = {**fields, "shared_mem_dynamic_size": 4096}
    if on_910_95 is not None:
        metadata["compile_on_910_95"] = on_910_95
    found = read_launch_metadata("k", metadata)
    assert found.dynamic_unified_buffer == (found.simt and on_910_95 is True)
    assert found.simt == (fields.get("parallel_mode") != "simd")


@pytest.mark.parametrize("value", [1 << 32, -1, 1.5, "4096"])
def test_the_unified_buffer_size_fits_acls_uint32(value: Any) -> None:
    with pytest.raises(KernelMetadataError, match="shared_mem_dynamic_size"):
        read_launch_metadata("k", {"parallel_mode": "simt", "shared_mem_dynamic_size": value})


def test_params_without_recorded_metadata_are_an_error_naming_the_kernel_never_zeros() -> None:
    from npu_inductor_compat.common.device.kernel_metadata import (
        FIELDS,
        LaunchMetadataMissing,
        read_saved_launch_metadata,
    )

    params = {"mangled_name": "triton_poi_0", "def_args": []}  # what upstream's save_gpu_kernel stores alone
    with pytest.raises(LaunchMetadataMissing, match=r"kernel 'triton_poi_0': its launch metadata was never recorded"):
        read_saved_launch_metadata("triton_poi_0", params)
    saved = {**params, **KernelLaunchMetadata(kernel="triton_poi_0", workspace_size=256).as_params()}
    assert set(FIELDS) <= set(saved)
    assert read_saved_launch_metadata("triton_poi_0", saved).workspace_size == 256


def test_torchs_own_autotuner_finds_triton_ascends_binary_for_an_npu_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record autotuner-kernel-metadata. triton-ascend keys its binary "npubin" (AscendBackend.binary_ext); torch's
    save_gpu_kernel falls back to "cubin" for a device it does not know (stock Inductor's kernels and torch's
    templates on npu): the record shows it the npubin there, passes every other attribute through, and saves the
    launch metadata of the launcher as given."""
    import types

    from npu_inductor_compat.common.fixes import cpp_wrapper_launch

    seen: dict[str, Any] = {}

    def upstream(self: Any, stream: Any, launcher: Any) -> None:  # what torch's reads (triton_heuristics.py)
        seen.update(binary=launcher.bin.asm["cubin"], name=launcher.bin.metadata.name, config=launcher.config)
        seen["has_num_warps"] = hasattr(launcher.bin, "num_warps")

    stored: list[Any] = []
    monkeypatch.setattr(cpp_wrapper_launch, "store_launch_metadata", lambda kernel, launcher: stored.append(launcher))
    save = cpp_wrapper_launch._saving_launch_metadata(upstream)
    binary = types.SimpleNamespace(metadata=types.SimpleNamespace(name="triton_tem_0 mix"), asm={"npubin": b"BIN"})
    launcher = types.SimpleNamespace(bin=binary, config="cfg")
    npu = types.SimpleNamespace(device_props=types.SimpleNamespace(type="npu"), inductor_meta={"kernel_name": "k"})
    save(npu, 0, launcher)
    assert seen == {"binary": b"BIN", "name": "triton_tem_0 mix", "config": "cfg", "has_num_warps": False}
    assert stored == [launcher] and binary.asm == {"npubin": b"BIN"}  # the real launcher is left as it was
    save(npu, 0, launcher=launcher)
    assert seen["binary"] == b"BIN"
    cuda = types.SimpleNamespace(device_props=types.SimpleNamespace(type="cuda"), inductor_meta={"kernel_name": "k"})
    with pytest.raises(KeyError, match="cubin"):
        save(cuda, 0, launcher)  # another device's kernel is upstream's business


def test_coalescing_is_read_as_triton_ascends_launcher_checks_it() -> None:
    found = read_launch_metadata("k", {"coalesce_factor": 4, "coalesce_axis": 1, "coalesce_grid_ceil_div": True})
    assert (found.coalesce_factor, found.coalesce_axis, found.coalesce_grid_ceil_div) == (4, 1, True)
    assert (read_launch_metadata("k", {}).coalesce_factor, read_launch_metadata("k", {}).coalesce_axis) == (1, -1)
    assert read_launch_metadata("k", {"coalesce_factor": 1, "coalesce_axis": -1}).coalesce_factor == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"coalesce_factor": 2},  # a factor with no axis
        {"coalesce_factor": 2, "coalesce_axis": 3},
        {"coalesce_factor": 1, "coalesce_axis": 0},  # an axis with no factor
        {"coalesce_grid_ceil_div": True},
        {"coalesce_factor": 2, "coalesce_axis": True},
        {"coalesce_factor": -2, "coalesce_axis": 0},
    ],
)
def test_a_coalescing_that_is_no_launch_contract_is_an_error_naming_the_kernel(fields: dict[str, Any]) -> None:
    with pytest.raises(KernelMetadataError, match="kernel 'k': .*coalesce"):
        read_launch_metadata("k", fields)


def test_the_native_launcher_is_known_by_its_required_field_and_a_rewritten_grid_is_refused() -> None:
    assert read_launch_metadata("k", {"program_grid_mapping_applied": False}).native_launcher is True
    assert read_launch_metadata("k", {}).native_launcher is False
    saved = read_launch_metadata("k", {"program_grid_mapping_applied": False}).as_params()
    assert read_launch_metadata("k", saved).native_launcher is True  # through the saved params
    for fields in ({"program_grid_mapping_applied": True}, {"program_grid_transforms": {"version": 2}}):
        with pytest.raises(KernelMetadataError, match="kernel 'k': its program grid was rewritten"):
            read_launch_metadata("k", fields)
