"""The stand-in for triton-ascend's active NPU driver (tools/simulated/kernels/triton_ascend_driver.py) against its
source."""

# triton-ascend's NPUDriver cannot be imported here (its package is a `triton` of its own, and NPUUtils builds a
# native module against CANN); its methods' Python is run from the cached 3.2.0 wheel instead, over a native module
# that answers rtGetSocVersion and rtGetAiCoreCount from the simulated SoC, and compared with the stand-in's answers.

from __future__ import annotations

import ast
import functools
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.tools.simulated.kernels import triton_ascend_driver
from npu_inductor_compat.tools.simulated.npu.device_properties import current_soc
from npu_inductor_compat.tools.simulated.wheel import wheel_stubs

DRIVER_METHODS = {
    "NPUUtils": ("get_device_properties", "get_aicore_num", "get_arch", "get_aivector_core_num"),
    "NPUDriver": ("get_current_target",),
}


def real_methods(path: Path, arch_from_env: Any) -> dict[str, type]:
    """NPUUtils and NPUDriver with only :data:`DRIVER_METHODS`, from the real file (no __init__: nothing native)."""
    from triton.backends.compiler import GPUTarget

    classes: dict[str, type] = {}
    with warnings.catch_warnings():  # the file's C source strings have escapes Python warns about
        warnings.simplefilter("ignore", DeprecationWarning)
        module = ast.parse(path.read_text())
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name in DRIVER_METHODS:
            node.bases, node.keywords = [], []
            node.body = [item for item in node.body if getattr(item, "name", None) in DRIVER_METHODS[node.name]]
            assert len(node.body) == len(DRIVER_METHODS[node.name]), node.name
            scope: dict[str, Any] = {
                "functools": functools,
                "GPUTarget": GPUTarget,
                "get_ascend_arch_from_env": arch_from_env,
            }
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), scope)
            classes[node.name] = scope[node.name]
    assert set(classes) == set(DRIVER_METHODS)
    return classes


def arch_from_env() -> Any:
    return next(stub for stub in wheel_stubs.STUBS if stub.attribute == "get_ascend_arch_from_env").value(None)  # type: ignore[arg-type]


@pytest.mark.download  # triton-ascend's wheel, installed into the cache on first use
@pytest.mark.parametrize("env_arch", [None, "Ascend910B1"])
def test_the_driver_answers_what_triton_ascends_own_methods_compute(
    env_arch: str | None, monkeypatch: pytest.MonkeyPatch, triton_ascend_root: Path
) -> None:
    if env_arch is None:
        monkeypatch.delenv("TRITON_ASCEND_ARCH", raising=False)
    else:
        monkeypatch.setenv("TRITON_ASCEND_ARCH", env_arch)
    real = real_methods(triton_ascend_root / "triton/backends/ascend/driver.py", arch_from_env())
    soc = current_soc()
    utils = object.__new__(real["NPUUtils"])
    # npu_utils.cpp: get_arch is rtGetSocVersion, get_aicore_num rtGetAiCoreCount (the SoC's AI cores)
    utils.npu_utils_mod = types.SimpleNamespace(get_arch=lambda: soc.name, get_aicore_num=lambda: soc.cube_core_num)
    driver = object.__new__(real["NPUDriver"])
    driver.utils = utils
    ours = triton_ascend_driver.NpuDriver(arch_from_env())
    assert ours.get_current_target() == driver.get_current_target()
    assert ours.get_current_target().arch == (env_arch or soc.name)
    assert ours.utils.get_device_properties(0) == utils.get_device_properties(0)
    assert ours.utils.get_aivector_core_num() == utils.get_aivector_core_num()


def test_what_needs_an_npu_raises_and_activation_restores_the_driver_state_exactly() -> None:
    from triton.runtime.driver import driver as config

    ours = triton_ascend_driver.NpuDriver(arch_from_env())
    for call in (ours.get_current_stream, ours.get_benchmarker, ours.utils.load_binary):
        with pytest.raises(triton_ascend_driver.NeedsAnNpu, match="needs CANN and an NPU"):
            call()
    before = dict(vars(config))
    restore = triton_ascend_driver.activate(ours)
    assert config.active is ours
    restore()
    assert vars(config) == before
