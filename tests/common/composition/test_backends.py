"""The backend table and its layers (common/): which records each backend applies, the npu_backend option,
missing providers, switching, and what each layer's replacement does against the real original."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import pytest

import npu_inductor_compat
from npu_inductor_compat.common.composition import backend_table, backends
from npu_inductor_compat.common.device import ascendc_layer, triton_layers

CONFIG_IDS = {"npu-backend-option", "npu-backend-per-compile"}
DEVICE_IDS = {
    "npu-device-op-overrides",
    "npu-device-to-aten",
    "npu-device-interface",
    "npu-flex-attention-device",
    "npu-backward-needs-activation",
}
TRITON_FAMILY_IDS = {
    "triton-has-triton-npu",
    "triton-gpu-types-npu",
    "triton-cpp-wrapper-two-pass",
    "triton-cache-system-npu",
    "triton-benchmarker-npu",
    "triton-template-heuristics-npu",
}
ASCENDC_IDS = {"ascendc-lowering-gpu-like", "ascendc-should-partition-hook", "ascendc-provider-loader"}


def applied_ids() -> set[str]:
    """Applied layer records (the line's torch-side fixes are backend-independent and tested on their own)."""
    return {item["id"] for item in npu_inductor_compat.status()["applied"] if item["layer"] != "fix"}


def statuses() -> dict[str, str]:
    return {fix["id"]: fix["status"] for fix in npu_inductor_compat.status()["fixes"]}


def not_needed_here() -> set[str]:
    return {record_id for record_id, status in statuses().items() if status == "not needed"}


@pytest.mark.parametrize(
    ("backend", "expected", "absent"),
    [
        ("triton", {*CONFIG_IDS, *DEVICE_IDS, *TRITON_FAMILY_IDS, "triton-register-npu-backend"}, ASCENDC_IDS),
        (
            "default",
            {*CONFIG_IDS, *DEVICE_IDS, *TRITON_FAMILY_IDS, "triton-register-npu-backend"},
            ASCENDC_IDS,
        ),
        ("mlir", {*CONFIG_IDS, *DEVICE_IDS, *TRITON_FAMILY_IDS, "mlir-provider-loader"}, ASCENDC_IDS),
        ("dvm", {*CONFIG_IDS, *DEVICE_IDS, *TRITON_FAMILY_IDS, "dvm-provider-loader"}, ASCENDC_IDS),
        (
            "ascendc",
            {*CONFIG_IDS, *DEVICE_IDS, *ASCENDC_IDS},
            TRITON_FAMILY_IDS | {"triton-register-npu-backend"},
        ),
    ],
)
def test_each_backend_applies_exactly_its_layers(
    backend: str, expected: set[str], absent: set[str], fake_provider: Any, fake_torch_npu: Any
) -> None:
    from torch._inductor import utils

    gpu_types = list(utils.GPU_TYPES)
    report = npu_inductor_compat.activate(backend)
    assert report["backend"] == backend_table.normalise(backend, "test")
    # records whose probe found upstream already has the fix on this line are "not needed", not applied
    assert applied_ids() == expected - not_needed_here()
    assert not (applied_ids() & absent)
    for record_id in expected:
        assert statuses()[record_id] in ("applied", "not needed")
    if backend == "ascendc":
        assert utils.GPU_TYPES == gpu_types  # GPU-like for lowering only
        from torch._inductor import lowering

        assert lowering.is_gpu("npu") and not utils.is_gpu("npu")
    else:
        assert utils.is_gpu("npu")


def test_loaders_register_the_providers_codegen(fake_provider: Any, fake_torch_npu: Any) -> None:
    from torch._inductor.codegen.common import get_scheduling_for_device

    expected = {"ascendc": "AscendC", "mlir": "Mlir", "dvm": "Mlir"}
    for backend, tag in expected.items():
        npu_inductor_compat.activate(backend)
        assert get_scheduling_for_device("npu").backend_tag == tag
    npu_inductor_compat.activate("triton")
    from torch._inductor.codegen.triton import TritonScheduling

    assert get_scheduling_for_device("npu") is TritonScheduling
    npu_inductor_compat.deactivate()
    assert get_scheduling_for_device("npu") is None


def test_switching_backends_leaves_exactly_the_current_layers(
    fake_provider: Any, fake_torch_npu: Any, torch_state: Any
) -> None:
    from torch._inductor import utils

    before = torch_state.snapshot()
    npu_inductor_compat.activate("triton")
    triton_ids = applied_ids()
    npu_inductor_compat.activate("ascendc")
    assert not (applied_ids() & TRITON_FAMILY_IDS) and "npu" not in utils.GPU_TYPES
    # decided on torch without the triton layer: "npu" in GPU_TYPES must not make the lowering patch look unneeded
    assert {"ascendc-lowering-gpu-like", "ascendc-should-partition-hook"} <= applied_ids()
    npu_inductor_compat.activate("triton")
    assert applied_ids() == triton_ids
    npu_inductor_compat.deactivate()
    torch_state.assert_same(before, torch_state.snapshot())


@pytest.mark.parametrize(
    ("backend", "package"),
    [
        ("ascendc", "torch_npu._inductor.ascendc"),
        ("mlir", "torch_mlir"),
        ("dvm", "torch_npu._inductor.dvm"),
    ],
)
def test_missing_provider_is_an_import_error_and_touches_nothing(
    backend: str, package: str, fake_provider: Any, torch_state: Any
) -> None:
    before = torch_state.snapshot()
    with pytest.raises(ImportError) as caught:
        npu_inductor_compat.activate(backend)
    message = str(caught.value)
    assert repr(package) in message and repr(backend) in message and "pip install" in message
    torch_state.assert_same(before, torch_state.snapshot())
    assert applied_ids() == set()


TRITON_CHOICES = [
    ("the default", None, {}),
    ("activate('default')", "default", {}),
    ("activate('triton')", "triton", {}),
    ("TORCHINDUCTOR_NPU_BACKEND", None, {backend_table.BACKEND_ENV: "triton"}),
]


def _reports_for_every_way_to_choose_triton(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    reports = {}
    for how, explicit, env in TRITON_CHOICES:
        with monkeypatch.context() as scoped:
            for key, value in env.items():
                scoped.setenv(key, value)
            npu_inductor_compat.activate(explicit)
            reports[how] = npu_inductor_compat.status()
            npu_inductor_compat.deactivate()
    return reports


def test_without_a_device_provider_every_way_to_choose_triton_skips_the_same(
    torch_state: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule however the backend was chosen: no device provider skips the device and backend layers with the
    reason in the report (it used to be an ImportError for an explicit choice only)."""
    from npu_inductor_compat.common.composition import providers

    previous = providers.set_provider(None)
    monkeypatch.setattr(providers, "torch_npu_installed", lambda: False)
    try:
        before = torch_state.snapshot()
        reports = _reports_for_every_way_to_choose_triton(monkeypatch)
        torch_state.assert_same(before, torch_state.snapshot())
    finally:
        providers.set_provider(previous)
    first = reports["the default"]
    assert first["backend"] is None and first["applied"]  # the torch-side records
    assert not {item["layer"] for item in first["applied"]} - {"config", "fix"}
    assert [item["what"] for item in first["skipped"]] == ["device and backend layers"]
    assert (
        "torch_npu is not installed" in first["skipped"][0]["why"]
        and "pip install torch_npu" in first["skipped"][0]["why"]
    )
    for how, report in reports.items():
        assert report == first, how


def test_without_triton_every_way_to_choose_triton_skips_the_same(
    fake_provider: Any, torch_state: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Triton is the runtime of the Triton family, like the device provider: missing, it skips, however chosen."""
    missing = backend_table.Requirement("npu_inductor_compat_no_such_triton", "pip install triton-ascend")
    for name in ("triton", "mlir", "dvm"):
        monkeypatch.setitem(
            backend_table.BACKENDS, name, dataclasses.replace(backend_table.BACKENDS[name], runtime=(missing,))
        )
    before = torch_state.snapshot()
    reports = _reports_for_every_way_to_choose_triton(monkeypatch)
    torch_state.assert_same(before, torch_state.snapshot())
    first = reports["the default"]
    assert first["backend"] is None
    assert [item["why"] for item in first["skipped"]] == [
        "backend 'triton' needs the package 'npu_inductor_compat_no_such_triton', which is not installed "
        "(pip install triton-ascend)"
    ]
    for how, report in reports.items():
        assert report == first, how


@pytest.mark.parametrize(
    ("backend", "package"),
    [("ascendc", "torch_npu._inductor.ascendc"), ("mlir", "torch_mlir"), ("dvm", "torch_npu._inductor.dvm")],
)
@pytest.mark.parametrize("how", ["argument", "env"])
def test_without_a_device_provider_a_missing_provider_package_is_still_an_import_error(
    backend: str, package: str, how: str, torch_state: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from npu_inductor_compat.common.composition import providers

    previous = providers.set_provider(None)
    monkeypatch.setattr(providers, "torch_npu_installed", lambda: False)
    try:
        before = torch_state.snapshot()
        if how == "env":
            monkeypatch.setenv(backend_table.BACKEND_ENV, backend)
        with pytest.raises(ImportError) as caught:
            npu_inductor_compat.activate(backend if how == "argument" else None)
        torch_state.assert_same(before, torch_state.snapshot())
    finally:
        providers.set_provider(previous)
    message = str(caught.value)
    assert repr(package) in message and repr(backend) in message and "pip install" in message
    assert ("TORCHINDUCTOR_NPU_BACKEND" in message) is (how == "env")
    assert npu_inductor_compat.status()["applied"] == []


@pytest.mark.parametrize("name", ["tirton", "", "ASCENDC ", 3, None])
def test_unknown_backend_names_are_rejected_with_the_valid_names(name: Any, fake_provider: Any) -> None:
    if name == "ASCENDC ":
        assert backend_table.normalise(name, "x") == "ascendc"  # case and spaces are forgiven
        return
    if name is None:
        assert backends.requested_backend(None) == backend_table.BackendChoice("triton", "default")
        return
    with pytest.raises(ValueError, match="valid: ascendc, default, dvm, mlir, triton"):
        npu_inductor_compat.activate(name)
    assert applied_ids() == set()


def test_a_str_subclass_is_read_as_its_text_and_a_plain_str_is_kept(fake_provider: Any) -> None:
    """Issue #44: a str subclass whose strip() returns a non-str gave a raw AttributeError, and the object was kept."""

    class Odd(str):
        def strip(self, chars: Any = None) -> Any:
            return 3

        def lower(self) -> Any:
            return None

    assert backend_table.normalise(Odd(" Triton "), "x") == "triton"
    report = npu_inductor_compat.activate(backend=Odd("triton"))
    assert type(report["backend"]) is str and report["backend"] == "triton"
    with pytest.raises(ValueError, match="unknown NPU backend"):
        backend_table.normalise(Odd("tirton"), "x")


def test_env_var_selects_the_backend_and_is_validated(
    fake_provider: Any, fake_torch_npu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(backend_table.BACKEND_ENV, "ascendc")
    assert npu_inductor_compat.activate()["backend"] == "ascendc"
    npu_inductor_compat.deactivate()
    monkeypatch.setenv(backend_table.BACKEND_ENV, "cuda")
    with pytest.raises(ValueError, match="TORCHINDUCTOR_NPU_BACKEND: unknown NPU backend 'cuda'"):
        npu_inductor_compat.activate()


def test_npu_backend_option_is_accepted_by_torch_compile_and_validated(fake_provider: Any) -> None:
    import torch
    import torch._inductor.config as config

    def fn(x: Any) -> Any:
        return x + 1

    with pytest.raises(RuntimeError, match="npu_backend"):
        torch.compile(fn, backend="inductor", options={"npu_backend": "ascendc"})  # before activation
    npu_inductor_compat.activate()
    torch.compile(fn, backend="inductor", options={"npu_backend": "ascendc"})
    torch.compile(fn, backend="inductor", options={"npu_backend": "default"})
    with pytest.raises(ValueError, match="unknown NPU backend 'tirton'; valid: ascendc, default, dvm, mlir, triton"):
        torch.compile(fn, backend="inductor", options={"npu_backend": "tirton"})
    with pytest.raises(ValueError, match="must be a string"):
        torch.compile(fn, backend="inductor", options={"npu_backend": 3})
    with config.patch(npu_backend="mlir"):
        assert backends.requested_backend(None) == backend_table.BackendChoice("mlir", "the npu_backend option")
    assert config.npu_backend is None
    npu_inductor_compat.deactivate()
    assert "npu_backend" not in config.get_config_copy()


def test_the_option_wins_over_the_env_var(
    fake_provider: Any, fake_torch_npu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch._inductor.config as config

    npu_inductor_compat.activate()
    monkeypatch.setenv(backend_table.BACKEND_ENV, "mlir")
    with config.patch(npu_backend="ascendc"):
        assert npu_inductor_compat.activate()["backend"] == "ascendc"


def test_a_loader_applies_its_layers_once_from_8_threads(
    fake_provider: Any, fake_torch_npu: Any, in_eight_threads: Any
) -> None:
    from torch._inductor import utils

    def activate_three_times() -> None:
        for _ in range(3):
            npu_inductor_compat.activate("mlir")

    in_eight_threads(activate_three_times)
    assert utils.GPU_TYPES.count("npu") == 1
    ids = [item["id"] for item in npu_inductor_compat.status()["applied"]]
    assert len(ids) == len(set(ids)) and "mlir-provider-loader" in ids


# ------------------------------------------------------------------ each replacement against the real original
def test_has_triton_sees_npu_under_every_name_consumers_look_up(fake_provider: Any) -> None:
    import torch._inductor.compile_fx as compile_fx
    import torch._inductor.scheduler as scheduler
    from torch.utils import _triton

    original = _triton.has_triton
    npu_inductor_compat.activate()
    assert _triton.has_triton is not original and _triton.has_triton.__wrapped__ is original
    assert scheduler.has_triton is _triton.has_triton and compile_fx.has_triton is _triton.has_triton
    assert _triton.has_triton() is True  # the fake provider's interface says the npu is available
    npu_inductor_compat.deactivate()
    assert _triton.has_triton is original and scheduler.has_triton is original


def test_cpp_wrapper_two_pass_check_takes_the_gpu_branch_for_npu(fake_provider: Any) -> None:
    from torch._inductor.graph import GraphLowering

    class Reached(Exception):
        pass

    class FakeGraph:
        device_types = {"npu"}
        aot_mode = True
        cpp_wrapper = True
        operations: list[Any] = []  # torch >= 2.13: CPU + AOTI looks for user-defined Triton kernels here

        def validate_can_generate_cpp_wrapper(self) -> None:  # called first from torch 2.14
            pass

        def codegen(self) -> tuple[str, str]:
            return ("single", "pass")

        def compile_to_module(self) -> Any:
            raise Reached

        def extract_real_inputs(self) -> Any:
            raise Reached

        @property
        def wrapper_code(self) -> Any:  # torch >= 2.14: the GPU branch (AOTI, lazy compile) reads it after codegen
            raise Reached

    import torch._inductor.config as config

    original = GraphLowering.codegen_with_cpp_wrapper
    with config.patch({"triton.autotune_at_compile_time": False}):
        assert original(FakeGraph()) == ("single", "pass")  # upstream: npu is treated like cpu
        npu_inductor_compat.activate(disable=["cpp-wrapper-workspace-locks"])  # it wraps the same method
        patched = GraphLowering.codegen_with_cpp_wrapper
        if "triton-cpp-wrapper-two-pass" in applied_ids():
            assert patched.__wrapped__ is original
            with pytest.raises(Reached):
                patched(FakeGraph())  # the GPU branch: a first pass, or (2.14) the GPU wrapper's lazy kernels
            FakeGraph.device_types = {"cpu"}
            assert patched(FakeGraph()) == ("single", "pass")
    npu_inductor_compat.deactivate()
    assert GraphLowering.codegen_with_cpp_wrapper is original


def test_npu_graphs_get_the_npu_cpp_wrapper_and_autotune_at_compile_time(fake_provider: Any, adapters: Any) -> None:
    """cpp-wrapper-workspace-locks: the NPU C++ wrapper replaces the placeholder registration, and npu graphs compile
    their kernels at compile time (the launch code needs each kernel's saved metadata); other devices are untouched."""
    import torch._inductor.config as config
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device
    from torch._inductor.graph import GraphLowering

    class FakeGraph:
        device_types = {"npu"}
        aot_mode = False
        cpp_wrapper = True

        def validate_can_generate_cpp_wrapper(self) -> None:  # called first from torch 2.14
            pass

        def codegen(self) -> Any:
            return config.triton.autotune_at_compile_time

    original = GraphLowering.codegen_with_cpp_wrapper
    with config.patch({"triton.autotune_at_compile_time": False}):
        npu_inductor_compat.activate()
        assert "cpp-wrapper-workspace-locks" in {item["id"] for item in npu_inductor_compat.status()["applied"]}
        # this line's NPU C++ wrapper (the include request differs between lines)
        assert get_wrapper_codegen_for_device("npu", cpp_wrapper=True) is adapters.cpp_wrapper_class()
        assert GraphLowering.codegen_with_cpp_wrapper(FakeGraph()) is True
        FakeGraph.device_types = {"cpu"}
        assert GraphLowering.codegen_with_cpp_wrapper(FakeGraph()) is False
        npu_inductor_compat.deactivate()
    assert GraphLowering.codegen_with_cpp_wrapper is original
    assert get_wrapper_codegen_for_device("npu", cpp_wrapper=True) is None


def test_cache_system_info_carries_npu_and_a_new_hash(fake_provider: Any) -> None:
    from torch._inductor.codecache import CacheBase

    before = CacheBase.get_system()
    npu_inductor_compat.activate()
    during = CacheBase.get_system()
    assert during["npu"]["provider"] == "test-fake" and during["hash"] != before["hash"]
    assert {k: v for k, v in during.items() if k not in ("npu", "hash")} == {
        k: v for k, v in before.items() if k != "hash"
    }
    npu_inductor_compat.deactivate()
    assert CacheBase.get_system() == before


def test_device_op_overrides_keep_builtin_lookups_working(fake_provider: Any) -> None:
    """The <= 2.11 trap: registering npu first must not hide cpu/cuda overrides."""
    from torch._inductor.codegen.common import get_device_op_overrides

    npu_inductor_compat.activate()
    npu = get_device_op_overrides("npu")
    assert "get_raw_stream" in npu.import_get_raw_stream_as("get_raw_stream")
    assert npu.device_guard(0) == "torch.npu.device(0)" and npu.synchronize() == "torch.npu.synchronize()"
    assert get_device_op_overrides("cuda") is not None and get_device_op_overrides("cpu") is not None


def test_device_to_aten_and_interface(fake_provider: Any) -> None:
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.codegen import cpp_utils

    npu_inductor_compat.activate()
    if hasattr(cpp_utils, "DEVICE_TO_ATEN"):
        assert cpp_utils.DEVICE_TO_ATEN["npu"] == "at::kPrivateUse1"
    else:  # torch >= 2.15: what the C++ wrapper calls, under both names it is looked up by
        from torch._inductor.codegen import cpp_wrapper_cpu

        assert cpp_utils.device_to_aten("npu") == cpp_wrapper_cpu.device_to_aten("npu") == "at::kPrivateUse1"
        assert cpp_utils.device_to_aten("cpu") == "at::kCPU"
    assert get_interface_for_device("npu").__name__ == "FakeNpuInterface"
    npu_inductor_compat.deactivate()
    with pytest.raises(NotImplementedError):
        get_interface_for_device("npu")


def test_benchmarker_routes_npu_to_benchmark_gpu(fake_provider: Any, adapters: Any) -> None:
    from torch._inductor.runtime import benchmarking

    npu_inductor_compat.activate()
    registry = getattr(benchmarking, "_BENCHMARK_DISPATCH", None)
    if registry is None:
        assert statuses()["triton-benchmarker-npu"] == "not needed"
        return
    calls: list[Any] = []
    if adapters.npu_benchmark is not triton_layers.benchmark_with_device_type:  # 2.12: benchmark_gpu takes no device
        fake_self = types.SimpleNamespace(benchmark_gpu=lambda fn, **kw: calls.append((fn, kw)) or 1.5)
        assert registry["npu"](fake_self, "fn", warmup=3, rep=7) == 1.5
        assert calls == [("fn", {"warmup": 3, "rep": 7})]
    # torch >= 2.13: a benchmark_gpu that takes the device type is told "npu" (it would default to cuda)
    calls.clear()

    def benchmark_gpu(fn: Any, device_type: Any = None, **kw: Any) -> float:
        calls.append((fn, {"device_type": device_type, **kw}))
        return 2.5

    assert registry["npu"](types.SimpleNamespace(benchmark_gpu=benchmark_gpu), "fn", warmup=3, rep=7) == 2.5
    assert calls == [("fn", {"device_type": "npu", "warmup": 3, "rep": 7})]


def test_should_partition_consults_the_backend_hook(fake_provider: Any, fake_torch_npu: Any) -> None:
    from torch._inductor.scheduler import Scheduler

    original = Scheduler.should_partition
    npu_inductor_compat.activate("ascendc")
    patched = Scheduler.should_partition
    assert patched.__wrapped__ is original

    class Backend:
        def scheduler_should_partition_override(self, scheduler: Any, node: Any, orig_fn: Any) -> Any:
            return ("hook", orig_fn is original)

    node = types.SimpleNamespace(get_device=lambda: "npu")
    scheduler = types.SimpleNamespace(get_backend=lambda device: Backend())
    assert patched(scheduler, node) == ("hook", True)
    npu_inductor_compat.deactivate()
    assert Scheduler.should_partition is original

    # Without a hook, or for a node without a device, the original decides, with every argument passed through.
    calls: list[Any] = []
    wrapper = ascendc_layer._should_partition_with_backend_hook(
        lambda *args, **kwargs: calls.append((args, kwargs)) or "orig"
    )
    no_hook = types.SimpleNamespace(get_backend=lambda device: object())
    assert wrapper(no_hook, node, should_log=True) == "orig"
    assert wrapper(no_hook, types.SimpleNamespace(get_device=lambda: None)) == "orig"
    assert calls[0] == ((no_hook, node), {"should_log": True})


def test_report_shows_backend_and_layers(fake_provider: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from npu_inductor_compat.__main__ import main

    assert main([]) == 0
    out = capsys.readouterr().out
    assert "backend  triton" in out
    assert "[device]" in out and "[triton-family]" in out and "[triton-registration]" in out
    assert "npu-device-interface" in out


def test_the_compile_option_leaves_a_graph_without_npu_tensors_alone(
    fake_provider: Any, fake_torch_npu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real torch.compile of a CPU function with options={"npu_backend": ...}: the graph touches no npu tensor, so
    it compiles as if the package were absent; the backend is not switched whatever the option says (the switch
    for npu graphs is tested with the simulated NPU in tests/compat/test_per_compile.py)."""
    import types

    import torch

    # torch_npu registers torch.npu; Inductor's get_gpu_type() asks every GPU type's module whether it is available
    monkeypatch.setattr(torch, "npu", types.SimpleNamespace(is_available=lambda: False), raising=False)

    npu_inductor_compat.activate("triton")
    before = applied_ids()

    def fn(x: Any) -> Any:
        return x.view(2, 4).t()  # views only: Inductor compiles the graph without building a C++ kernel for it

    compiled = torch.compile(fn, backend="inductor", options={"npu_backend": "ascendc", "fx_graph_cache": False})
    x = torch.randn(8)
    assert torch.equal(compiled(x), fn(x))
    assert npu_inductor_compat.status()["backend"] == "triton"
    assert applied_ids() == before


def test_a_backend_switch_never_removes_the_option_another_thread_may_be_checking(
    fake_provider: Any, fake_torch_npu: Any
) -> None:
    """A switch undoes the old backend's layers, but the config layer is the same for every selection: the option's
    entry is the very same object throughout (were it undone and redone, a torch.compile in another thread could
    find "npu_backend" missing mid-switch: seen on torch 2.7.1 in tests/compat/test_per_compile.py)."""
    import torch._inductor.config as config

    npu_inductor_compat.activate("triton")
    entry = config._config["npu_backend"]
    npu_inductor_compat.activate("ascendc")
    assert npu_inductor_compat.status()["backend"] == "ascendc"
    assert config._config["npu_backend"] is entry
    assert "npu-backend-per-compile" in applied_ids()
