"""``codegen --check-kernels``: every generated kernel config through triton-ascend's real compiler front end."""

# No NPU and no CANN here, so this runs the real compiler one level below them: triton-ascend's wheel (downloaded and
# installed once into the cache, beside the environment, never into it) takes each Inductor kernel of the simulated
# NPU from the AST to TTIR and through ``triton-adapter-opt`` to linalg, and stops before npubin (CANN's
# bishengir-compile). The check is shown able to fail with the compiler's own messages.

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

pytestmark = [pytest.mark.subprocess, pytest.mark.download]

EXAMPLES = ROOT / "examples"

# Kernels triton-ascend 3.2.0 must reject, one graph each.
REJECTED = """
import torch

def double(x):  # fp64 loads (Inductor masks every load)
    return (x * 2.0 + 1.0).sin()

def erfc(x):  # a libdevice function triton-ascend's libdevice does not have
    return torch.special.erfc(x)

x = torch.randn(16, 40)
torch.compile(double)(x.double().to("npu"))
torch.compile(erfc)(x.to("npu"))
"""


def codegen(tmp_path: Path, script: Path, *flags: str) -> tuple[Any, dict[str, Any]]:
    # stock Inductor's kernels, whatever the default here
    done = run_codegen(script, "--check-kernels", *flags, out=tmp_path / "out", timeout=1800)
    assert done.summary is not None, done.stdout[-3000:] + done.stderr[-3000:]
    summary: dict[str, Any] = done.summary
    if (summary.get("kernel_check") or {}).get("triton_ascend") is None:
        pytest.skip(f"triton-ascend unavailable: {summary['kernel_check']['error']}")
    return done, summary


def configs(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, result)
        for graph in summary["graphs"]
        for name, results in graph["kernel_check"].items()
        for result in results
    ]


def test_every_config_of_every_kernel_lowers_to_linalg_and_the_users_triton_is_untouched(tmp_path: Path) -> None:
    done, summary = codegen(tmp_path, EXAMPLES / "pointwise_reduction.py")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check = summary["kernel_check"]
    assert check["triton_ascend"] == "3.2.0" and check["rejected"] == 0 and check["error"] is None
    results = configs(summary)
    kernels = {name for graph in summary["graphs"] for name in graph["kernels"]}
    assert {name for name, _ in results} == kernels and len(results) >= 2 * len(kernels) >= 2
    for _, result in results:
        assert result["ok"] and result["stage"] == "linalg" and result["error"] is None
        assert set(result["seconds"]) == {"ttir", "ttir-passes", "linalg"}
    assert "kernel configs lowered" in done.stdout
    theirs = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('triton').origin)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "npu-inductor-compat" not in theirs.stdout and "triton_ascend" not in theirs.stdout


def test_kernels_triton_ascend_rejects_fail_the_check_with_the_compilers_own_message(tmp_path: Path) -> None:
    script = tmp_path / "rejected.py"
    script.write_text(textwrap.dedent(REJECTED))
    done, summary = codegen(tmp_path, script)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "KERNEL CONFIGS REJECTED by triton-ascend" in done.stdout
    rejected = {
        (name, json.dumps(result["config"], sort_keys=True)): result
        for name, result in configs(summary)
        if not result["ok"]
    }
    assert summary["kernel_check"]["rejected"] == len(rejected) >= 2
    messages = "\n".join(result["error"] for result in rejected.values())
    # (triton-adapter-opt's own aborts, kept as printed, are in tests/common/fixes/test_kernel_forms.py)
    assert "fp64] is unsupported on Ascend" in messages  # the code generator refuses fp64 loads
    assert "has no attribute 'erfc'" in messages  # no such function in tl.extra.ascend.libdevice


TWICE = """
import torch


def first(x):
    return (x.sin() + 1.0).sum(-1)


def second(x):  # the same body: the same kernel source, in a graph of its own
    return (x.sin() + 1.0).sum(-1)


x = torch.randn(8, 33)
for fn in (first, second):
    torch.compile(fn)(x.to("npu"))
"""


@pytest.mark.once
def test_a_kernel_met_twice_is_lowered_once_and_a_second_run_comes_from_the_verdict_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two graphs with one kernel source: the compiler runs once per config (the worker's results are counted), both
    kernels get the verdicts. Run again, nothing is lowered: every verdict comes from the cache; --no-cache lowers
    again; a damaged entry is lowered again and rewritten. On one line (`once`): the cache is the tools' own code
    around the one triton-ascend every line uses; its 35-40 s a line went on three runs of the same compile."""
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS", str(tmp_path / "verdicts"))
    script = tmp_path / "twice.py"
    script.write_text(TWICE)

    def run(name: str, *flags: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        (tmp_path / name).mkdir()
        return codegen(tmp_path / name, script, *flags)

    done, cold = run("cold")
    check = cold["kernel_check"]
    assert done.returncode == 0 and check["kernels"] == {"files": 2, "lowered": 1, "from_cache": 0}
    assert check["duplicates"] == 1 and check["configs"] == 2 * check["lowered"] > 0
    first, second = (graph["kernel_check"] for graph in cold["graphs"])
    assert list(first.values()) == list(second.values()) and all(result["ok"] for _, result in configs(cold))
    assert "kernel check: 1/1 kernels" in done.stderr  # the progress line

    done, warm = run("warm")
    check = warm["kernel_check"]
    assert check["kernels"] == {"files": 2, "lowered": 0, "from_cache": 1} and check["lowered"] == 0
    assert [graph["kernel_check"] for graph in warm["graphs"]] == [graph["kernel_check"] for graph in cold["graphs"]]
    assert "1 kernel(s) from the verdict cache" in done.stdout

    _, again = run("no-cache", "--no-cache")
    assert again["kernel_check"]["kernels"]["from_cache"] == 0 and again["kernel_check"]["lowered"] > 0
    (entry,) = (tmp_path / "verdicts").glob("*.json")
    entry.write_text(entry.read_text()[:40])
    _, damaged = run("damaged")
    assert damaged["kernel_check"]["kernels"]["lowered"] == 1 and json.loads(entry.read_text())["results"]
