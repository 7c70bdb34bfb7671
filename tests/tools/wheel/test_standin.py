"""The torch_npu stand-in (tools/simulated/wheel/standin.py) and the torch.npu API of the simulated NPU it serves."""

# What needs the simulated device runs in fresh interpreters (setting the device up renames PrivateUse1 for the
# rest of a process); the rest runs here.

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from typing import Any

import pytest
from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py

from npu_inductor_compat.tools.simulated.npu.soc import DEFAULT_SOC, get_soc
from npu_inductor_compat.tools.simulated.wheel import standin
from npu_inductor_compat.tools.simulated.wheel.standin import (
    NotSimulated,
    NotSimulatedError,
    NotSimulatedModule,
    torch_npu_standin,
)


def run(code: str, *args: str) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one line ``RESULT <json>``."""
    env = child_env()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT ") :])


# ------------------------------------------------------------------------------------------------ in this process
def test_not_simulated_errors_are_what_probes_and_imports_expect() -> None:
    attribute = NotSimulated("x", name="x")
    module = NotSimulatedModule("y", name="y")
    assert isinstance(attribute, AttributeError) and isinstance(attribute, NotSimulatedError)
    assert isinstance(module, ModuleNotFoundError) and isinstance(module, NotSimulatedError)
    assert (attribute.name, module.name) == ("x", "y")


def test_an_imported_torch_npu_is_never_shadowed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = types.ModuleType("torch_npu")
    monkeypatch.setitem(sys.modules, "torch_npu", real)
    meta_path = list(sys.meta_path)
    with pytest.raises(RuntimeError, match="torch_npu is already imported"), torch_npu_standin():
        pass
    assert sys.meta_path == meta_path and sys.modules["torch_npu"] is real


def test_a_second_stand_in_is_refused_and_the_first_is_undone_when_its_block_raises() -> None:
    meta_path = list(sys.meta_path)
    with pytest.raises(KeyError), torch_npu_standin() as use:
        assert len(sys.meta_path) == len(meta_path) + 1
        with pytest.raises(RuntimeError, match="already active"), torch_npu_standin():
            pass
        raise KeyError("the script failed")
    assert sys.meta_path == meta_path
    assert "torch_npu" not in sys.modules
    assert use.summary() == {"imported": False, "not_simulated": []}


def test_this_packages_own_look_ups_see_no_torch_npu_and_are_not_recorded() -> None:
    """Activation and the version report behave as without torch_npu while the script has not imported it."""
    from npu_inductor_compat.common.composition import providers
    from npu_inductor_compat.common.composition.backend_table import Requirement
    from npu_inductor_compat.version import installed_versions

    with torch_npu_standin() as use:
        assert providers.torch_npu_installed() is False
        assert Requirement("torch_npu._inductor.dvm", "pip install torch_npu").problem() is not None
        assert installed_versions()["torch_npu"] is None
    assert use.summary() == {"imported": False, "not_simulated": []}
    assert "torch_npu" not in sys.modules


# ------------------------------------------------------------------------------------------------ fresh interpreters
STANDIN_SCRIPT = r"""
import json, sys, warnings
import torch
from npu_inductor_compat.common.composition.backend_table import Requirement
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.wheel import standin

device.setup()
out = {}
modules_before, meta_before = dict(sys.modules), list(sys.meta_path)


def restored():
    same = sys.modules.keys() == modules_before.keys() and all(sys.modules[k] is v for k, v in modules_before.items())
    return {"modules": same, "meta_path": sys.meta_path == meta_before}


def caught(run):
    try:
        run()
    except BaseException as err:
        return {"mro": [c.__name__ for c in type(err).__mro__], "message": str(err), "name": getattr(err, "name", None)}
    return None


with standin.torch_npu_standin() as use:
    import torch_npu
    import torch_npu.npu
    from torch_npu import npu
    out["module"] = {
        "npu_is_torch_npu": npu is torch.npu is torch_npu.npu is sys.modules["torch_npu.npu"],
        "mark": getattr(torch_npu, standin.MARK, False),
        "has_file": hasattr(torch_npu, "__file__"),
        "doc": torch_npu.__doc__,
    }
    out["hasattr_rms_norm"] = hasattr(torch_npu, "npu_rms_norm")  # simulated (npu_ops.py)
    out["rms_norm_is_the_op"] = torch_npu.npu_rms_norm is torch.ops.npu.npu_rms_norm
    out["hasattr_quant_matmul"] = hasattr(torch_npu, "npu_quant_matmul")
    out["format_cast"] = caught(lambda: torch_npu.npu_format_cast)
    out["transfer_to_npu"] = caught(lambda: exec("import torch_npu.contrib.transfer_to_npu"))
    out["npu_foo"] = caught(lambda: torch.npu.foo)
    out["getattr_default"] = getattr(torch.npu, "bar", "default")
    # the same probes made from torch's and this package's own files are not the script's
    probe = "hasattr(torch.npu, 'asked_by_torch'); hasattr(torch_npu, 'asked_by_torch')"
    exec(compile(probe, torch.__file__, "exec"), {"torch": torch, "torch_npu": torch_npu})
    out["dvm_problem"] = Requirement("torch_npu._inductor.dvm", "pip install torch_npu").problem()
out["use"] = use.summary()
out["restored"] = restored()
out["ops_after"] = hasattr(torch.ops.npu, "npu_rms_norm")

try:
    with standin.torch_npu_standin() as failing:
        import torch_npu
        raise KeyError("the script failed")
except KeyError:
    pass
out["failing_use"] = failing.summary()
out["restored_after_raise"] = restored()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def standin_run() -> Any:
    return run(STANDIN_SCRIPT)


@pytest.mark.subprocess
def test_import_torch_npu_gives_the_marked_stand_in_whose_npu_is_the_simulated_torch_npu(standin_run: Any) -> None:
    module = standin_run["module"]
    assert module["npu_is_torch_npu"] and module["mark"] is True
    assert module["has_file"] is False and "not torch_npu" in module["doc"]
    assert standin_run["use"]["imported"] is True


@pytest.mark.subprocess
def test_what_is_not_simulated_raises_naming_it_and_is_recorded(standin_run: Any) -> None:
    assert standin_run["hasattr_rms_norm"] is True and standin_run["rms_norm_is_the_op"] is True
    assert standin_run["hasattr_quant_matmul"] is False
    assert standin_run["ops_after"] is False  # the npu:: operators are defined for the block only
    fmt, transfer, foo = standin_run["format_cast"], standin_run["transfer_to_npu"], standin_run["npu_foo"]
    assert fmt["mro"][:3] == ["NotSimulated", "NotSimulatedError", "AttributeError"]
    assert fmt["message"].startswith("torch_npu.npu_format_cast is not simulated")
    assert transfer["mro"][0] == "NotSimulatedModule" and "ModuleNotFoundError" in transfer["mro"]
    assert transfer["message"].startswith("torch_npu.contrib.transfer_to_npu is not simulated")
    assert transfer["name"] == "torch_npu.contrib.transfer_to_npu"
    assert foo["mro"][0] == "NotSimulated" and foo["message"].startswith("torch.npu.foo is not simulated")
    assert standin_run["getattr_default"] == "default"
    assert "'torch_npu._inductor.dvm'" in standin_run["dvm_problem"]  # this package's own look-up: not installed
    # each name once, in the order asked; torch's and this package's own probes are not the script's
    assert standin_run["use"]["not_simulated"] == [
        "torch_npu.npu_quant_matmul",
        "torch_npu.npu_format_cast",
        "torch_npu.contrib.transfer_to_npu",
        "torch.npu.foo",
        "torch.npu.bar",
    ]


@pytest.mark.subprocess
def test_leaving_restores_sys_modules_and_meta_path_even_when_the_script_raised(standin_run: Any) -> None:
    assert standin_run["restored"] == {"modules": True, "meta_path": True}
    assert standin_run["restored_after_raise"] == {"modules": True, "meta_path": True}
    assert standin_run["failing_use"] == {"imported": True, "not_simulated": []}


ACTIVATION_SCRIPT = r"""
import json, re, sys
import torch
import npu_inductor_compat
from npu_inductor_compat.common.composition import providers
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.codegen.capture import capturing
from npu_inductor_compat.tools.simulated.wheel.standin import torch_npu_standin
from npu_inductor_compat.version import installed_versions

device.setup()
out = {"socs": {}}
with torch_npu_standin() as use:
    import torch_npu
    out["provider"] = providers.active_provider().name
    npu_inductor_compat.activate("triton")
    out["torch_npu_version"] = installed_versions()["torch_npu"]
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.runtime.hints import DeviceProperties

    out["interface"] = get_interface_for_device("npu").__name__
    for name in json.loads(sys.argv[1]):
        device.use_soc(name)
        torch._dynamo.reset()
        created = DeviceProperties.create(torch.device("npu", 0))
        with capturing() as capture:
            compiled = torch.compile(lambda x: (x.sin() + 1).sum(-1), options={"fx_graph_cache": False})
            compiled(torch.randn(64, 256, device="npu"))
        kernels = "\n".join(source for graph in capture.graphs for source in graph.kernels.values())
        out["socs"][name] = {
            "created": [created.multi_processor_count, created.cc, created.major, created.warp_size],
            "in_kernels": sorted(set(re.findall(r"DeviceProperties\([^)]*\)", kernels))),
            "errors": [graph.error for graph in capture.graphs if graph.error],
            "name": torch_npu.npu.get_device_name(),
        }
out["use"] = use.summary()
print("RESULT " + json.dumps(out))
"""

# Three SoCs with different vector core counts, the default among them.
SOCS_TO_COMPILE = sorted({DEFAULT_SOC, "Ascend910B2", "Ascend310P3"})


@pytest.fixture(scope="module")
def activation_run() -> Any:
    return run(ACTIVATION_SCRIPT, json.dumps(SOCS_TO_COMPILE))


@pytest.mark.subprocess
def test_activation_under_the_stand_in_uses_the_simulated_npu(activation_run: Any) -> None:
    assert activation_run["provider"] == "simulated-npu"
    assert activation_run["interface"] == "SimulatedNpuInterface"
    assert activation_run["torch_npu_version"] is None  # no distribution of torch_npu was installed
    assert activation_run["use"] == {"imported": True, "not_simulated": []}


@pytest.mark.subprocess
@pytest.mark.parametrize("name", SOCS_TO_COMPILE)
def test_inductors_device_properties_follow_the_selected_soc_as_torch_npu_makes_them(
    activation_run: Any, name: str
) -> None:
    """Inductor's DeviceProperties for npu (and each generated kernel's) carry the SoC's vector core count as the
    SM count and its name as the compute capability, with no CUDA major or warp size (torch_npu's rules)."""
    found, soc = activation_run["socs"][name], get_soc(name)
    assert found["errors"] == [] and found["name"] == name
    assert found["created"] == [soc.vector_core_num, name, None, None]
    assert found["in_kernels"], "no kernel carried DeviceProperties"
    for props in found["in_kernels"]:
        assert f"multi_processor_count={soc.vector_core_num}," in props and f"cc='{name}'" in props


API_SCRIPT = r"""
import json, warnings
import torch
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.wheel import standin

device.setup()
out = {}
with standin.torch_npu_standin():
    import torch_npu
    npu = torch_npu.npu
    required = [
        "is_available", "device_count", "current_device", "set_device", "device", "synchronize", "manual_seed",
        "manual_seed_all", "seed", "seed_all", "initial_seed", "Stream", "Event", "current_stream", "default_stream",
        "stream", "set_stream", "get_device_name", "get_device_properties", "get_device_capability", "memory_allocated",
        "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
        "reset_max_memory_allocated", "mem_get_info", "memory_stats", "empty_cache", "set_compile_mode", "set_option",
        "config", "matmul", "conv", "is_bf16_supported", "get_soc_version",
    ]
    out["missing"] = [name for name in required if not hasattr(npu, name)]
    npu.synchronize()
    with npu.device(1):
        out["inside_device_1"] = npu.current_device()
    out["after_device_1"] = npu.current_device()
    npu.manual_seed(7)
    first = torch.randn(3, device="npu").cpu().tolist()
    npu.manual_seed(7)
    out["seeded"] = first == torch.randn(3, device="npu").cpu().tolist()
    out["stream_device"] = str(npu.current_stream().device)

    base = npu.memory_allocated()
    block = torch.empty(1 << 20, dtype=torch.uint8, device="npu")
    out["grew"] = npu.memory_allocated() - base
    out["peak_at_least"] = npu.max_memory_allocated() - base
    del block
    npu.reset_peak_memory_stats()
    out["peak_after_reset"] = npu.max_memory_allocated() - npu.memory_allocated()
    small = torch.empty(1 << 10, dtype=torch.uint8, device="npu")
    out["peak_small"] = npu.max_memory_allocated() - base
    stats = npu.memory_stats()
    out["stats"] = {key: stats[key] - (base if "bytes" in key else 0) for key in stats}
    out["reserved_is_allocated"] = npu.memory_reserved() == npu.memory_allocated()
    free, total = npu.mem_get_info()
    out["mem_get_info"] = [total, total - free - npu.memory_allocated()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npu.reset_max_memory_allocated()
    out["deprecation"] = [w.category.__name__ for w in caught]

    npu.set_compile_mode(jit_compile=False)
    torch.npu.config.allow_internal_format = False
    npu.matmul.allow_hf32 = True
    out["options"] = device.simulated_options()
    out["reads"] = [npu.matmul.allow_hf32, npu.conv.allow_hf32]
    for key, act in {
        "read_config": lambda: torch.npu.config.allow_internal_format,
        "hf32_not_bool": lambda: setattr(npu.matmul, "allow_hf32", 1),
        "unknown_config": lambda: setattr(npu.config, "allow_everything", True),
        "set_option_not_dict": lambda: npu.set_option("jitCompile"),
    }.items():
        try:
            act()
            out[key] = None
        except Exception as err:
            out[key] = [type(err).__name__, str(err)]
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def api_run() -> Any:
    return run(API_SCRIPT)


@pytest.mark.subprocess
def test_torch_npu_npu_has_torch_npus_device_stream_seed_memory_and_option_calls(api_run: Any) -> None:
    assert api_run["missing"] == []
    assert (api_run["inside_device_1"], api_run["after_device_1"]) == (1, 0)
    assert api_run["seeded"] is True and api_run["stream_device"] == "npu:0"


@pytest.mark.subprocess
def test_memory_queries_count_the_simulated_tensors(api_run: Any) -> None:
    block = 1 << 20
    assert api_run["grew"] == block and api_run["peak_at_least"] >= block
    assert api_run["peak_after_reset"] == 0  # the peak starts again from what is live
    assert 1 << 10 <= api_run["peak_small"] < block
    stats = api_run["stats"]
    assert stats["allocated_bytes.all.current"] == stats["reserved_bytes.all.current"] == 1 << 10
    assert stats["allocated_bytes.all.peak"] == stats["reserved_bytes.all.peak"] == api_run["peak_small"]
    assert stats["num_ooms"] == 0 and list(stats) == sorted(stats)
    assert api_run["reserved_is_allocated"] is True
    assert api_run["mem_get_info"] == [get_soc(DEFAULT_SOC).total_memory, 0]
    assert api_run["deprecation"] == ["DeprecationWarning"]


@pytest.mark.subprocess
def test_options_are_recorded_and_read_back_as_torch_npu_allows(api_run: Any) -> None:
    assert api_run["options"] == {
        "jitCompile": "disable",
        "ALLOW_INTERNAL_FORMAT": "disable",
        "ALLOW_MATMUL_HF32": "enable",
    }
    assert api_run["reads"] == [True, True]  # conv's hf32 reads as on while unset, as torch_npu's
    assert api_run["read_config"][0] == "AttributeError" and "can be set but not read" in api_run["read_config"][1]
    assert api_run["hf32_not_bool"][0] == "TypeError"
    assert api_run["unknown_config"] == ["NotSimulated", standin._message("torch.npu.config.allow_everything")]
    assert api_run["set_option_not_dict"][0] == "TypeError"
