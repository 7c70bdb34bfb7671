"""What the NPU C++ wrapper tests share (tests only): the launch-metadata scenarios, the emulated runtime's build,
and running a plan through run_wrapper.py in a fresh process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
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


def _load_build() -> Any:
    spec = importlib.util.spec_from_file_location("emulated_acl_build", EMULATED / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_emulated_npu(folder: Path, *, capture: bool = True) -> Any:
    """The stub libtorch_npu and libascendcl for this torch line (skips the test when no paired headers exist);
    ``capture=False``: an ACL runtime without aclmdlRICaptureGetInfo."""
    import pytest
    import torch

    from npu_inductor_compat.tools.simulated.codegen import headers

    try:
        (source,) = headers.torch_npu_headers(torch.__version__)
    except headers.HeaderCheckUnavailable as err:
        pytest.skip(f"no torch_npu headers to build the emulated runtime against: {err}")
    return _load_build().build(folder, source.include, capture=capture)


def run_plan(
    emulated_npu: Any, plan: dict[str, Any], directory: Path, env: dict[str, str] | None = None
) -> dict[str, Any]:
    path = directory / "plan.json"
    path.write_text(json.dumps(plan))
    queue = ("TASK_QUEUE_ENABLE", "ASCEND_LAUNCH_BLOCKING")  # torch_npu's default: the queue on, at level 1
    verdicts = emulated_npu.torch_npu_home.parent / "isa_verdicts"  # one probe per test module (run_wrapper.py)
    verdicts.mkdir(exist_ok=True)
    env = {
        **{key: value for key, value in os.environ.items() if key not in queue},
        **emulated_npu.env(),
        "EMULATED_ACL_ISA_VERDICTS": str(verdicts),
        "TORCHINDUCTOR_CACHE_DIR": str(emulated_npu.torch_npu_home.parent / "inductor"),  # the module's own
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
    return result
