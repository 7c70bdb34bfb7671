"""The survey's static verdicts ("carried" / "not carried" by torch_npu itself) against what torch_npu's released code
does when it runs, loaded by the torch_npu-wheel provider (no NPU: one level below the device); then activation
with that provider applies our records to the real torch_npu classes."""

# Covered: ``autotuner-kernel-metadata`` (torch_npu's own ``save_gpu_kernel`` called with a launcher whose compiled
# metadata has a workspace and locks), ``flex-backward-symbolic-grid`` (the grid of torch's flex backward template after
# torch_npu loaded, on the lines whose torch lacks a symbolic one), and ``flex-configs-from-device`` (whose lowering
# handles flex_attention). The torch_npu-patching records are checked in tests/common/fixes/test_torch_npu_fixes.py. Not
# covered here: the C++-wrapper verdicts (``cpp-wrapper-workspace-locks``, ``triton-cpp-wrapper-two-pass``), which need
# torch_npu's C++ wrapper to run, and the ascendc ones (its backend is not loaded by this provider).

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.tools import wheel_cache
from npu_inductor_compat.tools.simulated.wheel import wheel_release
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable
from npu_inductor_compat.tools.torch_npu_survey import survey

README = ROOT / "README.md"

CHILD = """
    import json, types
    import torch
    from npu_inductor_compat.activation import activate, deactivate
    from npu_inductor_compat import torch_line
    from npu_inductor_compat.common import torch_npu_names
    from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel, wheel_targets
    from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker

    found = {}
    with torch_npu_wheel.wheel_run(checker=TtirCheckWorker) as (use, _, _):
        # 1. torch_npu's own autotuner saving a kernel whose compiled metadata has a workspace and locks. The metadata
        # fields are the ones triton-ascend's compiler records (triton/backends/ascend/compiler.py: workspace_size,
        # lock_num, lock_init_val from the kernel library's _infer_* callbacks; mix_mode, parallel_mode from linalg).
        from torch._inductor.codecache import CudaKernelParamCache

        save = torch_npu_names.first_defined("autotuner-save-kernel")
        metadata = types.SimpleNamespace(
            name="k_verdict aiv", num_warps=1, shared=0, mix_mode="aiv", parallel_mode="simd", force_simt_only=False,
            workspace_size=4096, lock_num=3, lock_init_val=0, shared_mem_dynamic_size=0,
            # what a triton-ascend newer than 3.2.0 also records, for the releases built for it (is_pure_simt)
            **dict(wheel_targets.release_targets(use.wheel.tree.version).compiler_fields),
        )
        launcher = types.SimpleNamespace(
            bin=types.SimpleNamespace(metadata=metadata, num_warps=1, shared=0, asm={"npubin": b"\\0"}),
            config=types.SimpleNamespace(kwargs={}, num_warps=1, num_stages=1),
            def_args=[], call_args=[],
        )
        import importlib
        owner = getattr(importlib.import_module(save.__module__), save.__qualname__.split(".")[0])
        autotuner = object.__new__(owner)  # torch_npu's autotuner, with only what saving a kernel reads
        autotuner.__dict__.update(
            inductor_meta={"kernel_name": "k_verdict"}, triton_meta={}, runtime_block_arg_names=(),
            best_runtime_blocks=(), device_props=types.SimpleNamespace(type="npu"),
            compiled_candidate_entries=(),  # 2.10.0.post7 on: NPUCachingAutotuner.__init__ sets it empty
        )
        try:
            save(autotuner, None, launcher)
            params = CudaKernelParamCache.get("k_verdict") or {}
            found["saved"] = {key: params.get(key) for key in ("workspace_size", "lock_num", "sync_block_lock_layout")}
        except Exception as err:
            found["saved_error"] = f"{type(err).__name__}: {err}"

        # 2. on torch 2.7/2.8 (whose own backward grid is not symbolic): the grid of torch's flex backward template
        # after torch_npu loaded (torch_npu's kernel/flex_attention.py may replace it)
        if torch_line() == "v2_7_1":
            from npu_inductor_compat.v2_7_1 import flex
            found["backward_grid_symbolic"] = flex.backward_grid_is_symbolic()

        # 3. the flex_attention lowering in effect
        from torch._inductor.lowering import lowerings
        found["flex_lowering"] = getattr(lowerings.get(torch.ops.higher_order.flex_attention), "__module__", None)

        # our records on torch_npu's classes
        report = activate()
        try:
            found["status"] = {fix["id"]: fix["status"] for fix in report["fixes"]}
            found["fixes"] = report["fixes"]  # the matrix cells are rendered by the test (dev/matrix.py)
            found["column"] = {"torch": report["versions"]["torch"], "line": report["line"]}
            found["save_wrapped"] = hasattr(torch_npu_names.first_defined("autotuner-save-kernel"), "__wrapped__")
        finally:
            deactivate()
    print("RESULT " + json.dumps(found))
"""


@pytest.fixture(scope="module")
def observed() -> tuple[str, dict[str, Any]]:
    import torch

    try:
        release = wheel_release.paired_release(torch.__version__)
        wheel_release.unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    env = child_env()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD)], capture_output=True, text=True, timeout=600, env=env
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return release, json.loads(lines[-1].removeprefix("RESULT "))


def verdict(release: str, fix_id: str) -> str:
    report = survey.survey(wheel_cache.fetch(release))
    return next(fix["status"] for fix in report.fixes if fix["id"] == fix_id)


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_autotuner_saves_the_launch_metadata_exactly_where_the_survey_says(
    observed: tuple[str, dict[str, Any]],
) -> None:
    release, found = observed
    assert "saved_error" not in found, found["saved_error"]
    saved = found["saved"]
    copies = saved["workspace_size"] == 4096 and (saved["lock_num"] or saved["sync_block_lock_layout"])
    assert bool(copies) == (verdict(release, "autotuner-kernel-metadata") == "carried"), (release, saved)
    # our record wraps torch_npu's own method as well as torch's (its saved params then carry the fields anyway)
    assert found["status"]["autotuner-kernel-metadata"] == "applied" and found["save_wrapped"], found


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own flex records
@pytest.mark.subprocess
@pytest.mark.download
def test_the_flex_verdicts_match_what_torch_npus_loading_did(observed: tuple[str, dict[str, Any]]) -> None:
    from npu_inductor_compat.v2_7_1 import flex

    release, found = observed
    own_lowering = (found["flex_lowering"] or "").startswith("torch_npu.")
    assert own_lowering == (verdict(release, "flex-configs-from-device") == "carried"), (release, found)
    if "backward_grid_symbolic" in found:  # torch 2.9+ has a symbolic backward grid itself: nothing to observe
        carried = verdict(release, "flex-backward-symbolic-grid") == "carried"
        assert found["backward_grid_symbolic"] == carried, (release, found)
        # where torch_npu carries it, our record finds it done; otherwise it applies its own grid
        assert found["status"][flex.SYMBOLIC_BACKWARD_GRID.id] == ("not needed" if carried else "applied"), found


@pytest.mark.subprocess
@pytest.mark.download
def test_the_readmes_torch_npu_matrix_column_for_this_line_is_what_activation_decides(
    observed: tuple[str, dict[str, Any]],
) -> None:
    import matrix

    from npu_inductor_compat.registry import fix_records

    release, found = observed
    table = matrix.parse(matrix.embedded(README.read_text(), matrix.TORCH_NPU_START, matrix.TORCH_NPU_END))
    title = matrix.column_title({**found["column"], "torch_npu": release})
    assert title in table, f"{title} is not a column of README's torch_npu matrix: run `nox -s matrix`"
    ids = {record.id for record in fix_records()}
    assert set(table[title]) == ids
    cells = {fix["id"]: matrix.cell(fix) for fix in found["fixes"]}
    assert table[title] == {fix_id: cells[fix_id] for fix_id in ids}, "README's torch_npu matrix is stale"
