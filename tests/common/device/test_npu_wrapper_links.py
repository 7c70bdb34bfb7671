"""What a generated NPU C++ wrapper needs from libtorch_npu, held against what the real libtorch_npu exports: the
wrapper is built and run on the simulated NPU against the stub, whose every definition a wrapper could bind to; the
real library (the paired torch_npu wheel's, read with nm, never loaded) decides which of them exist on hardware."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path
from typing import Any

import emulated_acl_harness as harness  # registered by conftest.py
import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build, pytest.mark.download]

LAUNCH = "aclrtLaunchKernelWithHostArgs"  # every wrapper with this package's launch calls it
# torch_npu's OpPreparation::unsafe_empty_workspace(size): what this package's launch first took scratch from on the
# calling thread; hidden in every release (its library is built with -fvisibility=hidden)
HIDDEN = "_ZN6at_npu6native13OpPreparation22unsafe_empty_workspaceEm"


def _symbols(library: Path, *, defined: bool) -> set[str]:
    which = "--defined-only" if defined else "--undefined-only"
    done = subprocess.run(
        ["nm", "-D", which, "--format=posix", str(library)], capture_output=True, text=True, check=True, timeout=120
    )
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def _real_exports(tmp_path: Path) -> tuple[str, set[str]]:
    """The paired torch_npu release and the dynamic symbols its wheel's libtorch_npu.so defines."""
    import torch

    from npu_inductor_compat.tools import wheel_cache
    from npu_inductor_compat.tools.simulated.codegen import headers
    from npu_inductor_compat.version import parse_release

    minor = ".".join(map(str, parse_release(torch.__version__)[:2]))
    if minor not in headers.PAIRED_TORCH_NPU:
        pytest.skip(f"no torch_npu release with the launch API is paired with torch {minor}")
    version = headers.PAIRED_TORCH_NPU[minor]
    wheel = headers._wheel(version, wheel_cache.default_cache_dir())
    library = tmp_path / "libtorch_npu.so"
    with zipfile.ZipFile(wheel) as archive:
        library.write_bytes(archive.read("torch_npu/lib/libtorch_npu.so"))
    return version, _symbols(library, defined=True)


def test_a_wrapper_binds_only_to_what_the_real_libtorch_npu_exports(emulated_npu: Any, tmp_path: Path) -> None:
    """Every wrapper built this session (at least the one of every launch scenario: workspace, locks, the queue's
    and the calling thread's scratch) needs from libtorch_npu only symbols the paired release's library exports: a
    hidden one links against the stub and fails to load on hardware ("undefined symbol"). Shown able to fail: the
    function this package's launch first called for calling-thread scratch is absent from the real exports."""
    plan = {
        "graph": "threads",
        "record": False,
        "scenarios": harness.SCENARIOS,
        "cores": harness.PLAN_CORES,
        "threads": 1,
        "iterations": 1,
        "sizes": [[64]],
    }
    found = harness.run_plan(emulated_npu, plan, tmp_path, {"TASK_QUEUE_ENABLE": "0"})
    assert found["errors"] == [], found["errors"]
    version, real = _real_exports(tmp_path)
    assert HIDDEN not in real, f"torch_npu {version} exports unsafe_empty_workspace"
    stub = _symbols(emulated_npu.torch_npu_home / "lib" / "libtorch_npu.so", defined=True)
    wrappers = {}
    for library in (emulated_npu.work / "inductor").rglob("*.so"):
        needed = _symbols(library, defined=False)
        if LAUNCH in needed:
            wrappers[library.name] = needed & stub
    assert wrappers, "no wrapper with this package's launch was built"
    assert any("MallocBlock" in name for needed in wrappers.values() for name in needed), wrappers
    missing = {name: sorted(needed - real) for name, needed in wrappers.items() if needed - real}
    assert missing == {}, f"symbols torch_npu {version}'s libtorch_npu.so does not export: {missing}"
