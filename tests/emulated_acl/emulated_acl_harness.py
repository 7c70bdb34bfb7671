"""What the NPU C++ wrapper tests share (tests only): the launch-metadata scenarios, the emulated runtime's build,
and running a plan through run_wrapper.py in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EMULATED = Path(__file__).resolve().parent
MIX = {"mix_mode": "mix", "auto_tile_and_bind_subblock": True}
SCENARIOS: list[dict[str, Any]] = [
    # workspace (per block a multiple of 8 bytes, not of 64: the locks after it must still start on a 64-byte
    # boundary) + lock_num locks initialised to 0 (a stream-ordered memset), on vector cores
    {"workspace_size": 65544, "lock_num": 3, "lock_init_val": 0, "mix_mode": "aiv"},
    # packed layout: 2 ordered + 1 unordered lock in mix mode (participants x2); triton-ascend starts the ordered
    # slots at 0 beside unordered locks whatever lock_init_val says
    {"workspace_size": 4096, "sync_block_lock_layout": (1 << 32) | 2, "lock_init_val": 7, **MIX},
    # pure SIMT under newer triton-ascend's name, compiled for 910_95: no lock or workspace pointer, a dynamic
    # unified buffer
    {
        "is_pure_simt": True,
        "parallel_mode": "simt",
        "shared_mem_dynamic_size": 122880,
        "workspace_size": 64,
        "compile_on_910_95": True,
    },
    # triton-ascend 3.2.0's spelling of the init value (5: not one byte repeated, so a copy from a host image), SIMT
    # parallel mode beside locks, compiled for another SoC than 910_95: no dynamic unified buffer; and 2 programs
    # coalesced into one along axis 0, the grid rounded up (a newer triton-ascend's compiler and launcher)
    {
        "lock_num": 2,
        "lock_init_value": 5,
        "mix_mode": "aic",
        "parallel_mode": "simt",
        "shared_mem_dynamic_size": 4096,
        "coalesce_factor": 2,
        "coalesce_axis": 0,
        "coalesce_grid_ceil_div": True,
    },
]
CORES = {0: (24, 48), 1: (20, 40)}  # (AI cores, vector cores) per emulated device
PLAN_CORES = {str(device): list(cores) for device, cores in CORES.items()}


@dataclass(frozen=True)
class SessionNpu:
    """The emulated NPU runtime (the tool's, built once into its cache) and this test session's ``work`` folder for
    it: the Inductor cache every run against this runtime shares (pytest-xdist workers too; the CPU-ISA verdicts
    are the machine's, kept by the tool: isa_verdicts.py)."""

    runtime: Any  # emulated_runtime.EmulatedNpu
    work: Path

    @property
    def libascendcl(self) -> Path:
        return Path(self.runtime.libascendcl)

    @property
    def torch_npu_home(self) -> Path:
        return Path(self.runtime.torch_npu_home)

    def env(self) -> dict[str, str]:
        return dict(self.runtime.env())


def build_emulated_npu(tmp_path_factory: Any, *, capture: bool = False) -> SessionNpu:
    """The stub libtorch_npu and libascendcl for this torch line (skips the test when no paired headers exist);
    ``capture=True``: an ACL runtime with aclmdlRICaptureGetInfo (the default has none, as a CANN from before aclgraph
    capture). Shared by every test of the session that asks for the same runtime."""
    import pytest
    import torch

    from npu_inductor_compat.tools.simulated.codegen import headers
    from npu_inductor_compat.tools.simulated.execution import emulated_runtime

    try:
        (source,) = headers.torch_npu_headers(torch.__version__)
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"no torch_npu headers to build the emulated runtime against: {err}")
    runtime = emulated_runtime.cached(source.include, capture=capture)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's basetemp sits in the run's own
        base = base.parent
    work = base / f"emulated_npu_{'capture' if capture else 'plain'}"
    work.mkdir(exist_ok=True)
    return SessionNpu(runtime, work)


def run_plan(
    emulated_npu: Any, plan: dict[str, Any], directory: Path, env: dict[str, str] | None = None
) -> dict[str, Any]:
    path = directory / "plan.json"
    path.write_text(json.dumps(plan))
    queue = ("TASK_QUEUE_ENABLE", "ASCEND_LAUNCH_BLOCKING")  # torch_npu's default: the queue on, at level 1
    env = {
        **{key: value for key, value in os.environ.items() if key not in queue},
        **emulated_npu.env(),
        "TORCHINDUCTOR_CACHE_DIR": str(emulated_npu.work / "inductor"),  # the session's, for this runtime
        "NPU_INDUCTOR_COMPAT_AUTOLOAD": "0",
        **(env or {}),
    }
    done = subprocess.run(
        [sys.executable, str(EMULATED / "run_wrapper.py"), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=directory,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr  # what torch_npu logs (LOG(ERROR)) goes there
    return result


def symbols(library: Path, *, defined: bool) -> set[str]:
    """The dynamic symbols ``library`` defines, or the ones it needs from others."""
    which = "--defined-only" if defined else "--undefined-only"
    done = subprocess.run(
        ["nm", "-D", which, "--format=posix", str(library)], capture_output=True, text=True, check=True, timeout=120
    )
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def real_exports(tmp_path: Path) -> tuple[str, set[str]]:
    """The paired torch_npu release and the dynamic symbols its wheel's libtorch_npu.so defines (read from the wheel
    with nm, never loaded; the test skips where no release is paired)."""
    import zipfile

    import pytest
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
    return version, symbols(library, defined=True)
