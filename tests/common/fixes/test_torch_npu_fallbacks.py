"""The record for torch_npu's implicit fallbacks under CI=true (common/fixes/torch_npu_fallbacks.py), on torch_npu's
code."""

# torch_npu cannot run here: its released Inductor Python (the torch_npu-wheel provider) generates the code for the
# simulated NPU, on the exact torch its wheel requires, with CI set as GitHub Actions sets it.

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py

from npu_inductor_compat.common.fixes.torch_npu_fallbacks import IMPLICIT_FALLBACK_UNDER_CI
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable, paired_release, unpacked

RECORD = IMPLICIT_FALLBACK_UNDER_CI.id
# gelu then split: torch_npu takes one or the other out of Inductor's tables on every release (2.7.1.post11: gelu's
# decomposition; 2.9.1 and 2.12.0.post3: split's lowering), and torch._decomp has a decomposition of each
SCRIPT = '''"""gelu, then split along the last dimension, on the NPU."""
import torch


def fn(x):
    first, second = torch.nn.functional.gelu(x).split(16, dim=-1)
    return first * second


x = torch.randn(4, 32)
torch.testing.assert_close(torch.compile(fn)(x.to("npu")).cpu(), fn(x))
'''


def test_without_torch_npu_the_record_is_not_needed() -> None:
    """Stock Inductor decomposes what it falls back on: without torch_npu's code the probe finds nothing to fix."""
    from npu_inductor_compat.activation import activate, deactivate

    try:
        report = activate()
    finally:
        deactivate()
    assert {fix["id"]: fix["status"] for fix in report["fixes"]}[RECORD] == "not needed"


@pytest.mark.subprocess
@pytest.mark.download
def test_under_ci_torch_npus_fallbacks_fail_without_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With CI=true the script compiles under the record; without it torch's make_fallback refuses the op torch_npu
    took out of Inductor's tables ("a decomposition exists"), so the graph fails, on every torch_npu release."""
    import torch

    try:
        release = paired_release(torch.__version__)
        unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    monkeypatch.setenv("CI", "true")
    script = tmp_path / "gelu_split.py"
    script.write_text(SCRIPT)

    def run(name: str, *flags: str) -> dict:
        out = tmp_path / name
        harness.torch_npu_codegen(script, out, *flags)
        return json.loads((out / "summary.json").read_text())

    fixed = run("with")
    assert fixed["fixes"][RECORD] == "applied", fixed["fixes"]
    assert [graph["status"] for graph in fixed["graphs"]] == ["ok"] and fixed["script_error"] is None
    plain = run("without", "--without-fix", RECORD)
    assert plain["without_fix"] == [RECORD]
    failed = [graph["error"] or {} for graph in plain["graphs"] if graph["status"] != "ok"]
    assert failed and "a decomposition exists" in str(failed[0].get("message")), (release, plain["graphs"])
