"""`--check-kernels` calls a config hung only when one of its stages makes no progress for the limit, never because
a worker's many quick configs added up past it (a torch_npu kernel can bring hundreds of autotune configs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated import kernel_check

pytestmark = pytest.mark.subprocess

# A stand-in for kernel_lowering's worker speaking its protocol (one JSON event a line: "start" per config and
# stage, "result" per config; --skip=KEY for the configs already done): config "a" takes two quick stages whose sum
# passes the limit, "b" hangs in its second stage, "c" is quick. Only the protocol is ours to fake: the real worker
# is tested against triton-ascend in test_kernel_check.py.
FAKE_WORKER = """
import json, sys, time
skip = {arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--skip=")}
def emit(event):
    print(json.dumps(event), flush=True)
for key, pauses in (("a", (0.8, 0.8)), ("b", (0.1, 60)), ("c", (0.1,))):
    if key in skip:
        continue
    for stage, pause in zip(("ttir", "linalg"), pauses):
        emit({"event": "start", "key": key, "file": "k.py", "kernel": "k", "config": {"X": key}, "stage": stage})
        time.sleep(pause)
    result = {"file": "k.py", "kernel": "k", "config": {"X": key}, "stage": "linalg", "ok": True, "error": None}
    emit({"event": "result", "key": key, "result": result})
"""


def test_only_a_stage_without_progress_is_hung(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(FAKE_WORKER)
    monkeypatch.setattr(kernel_check, "WORKER", (str(worker),))
    start = time.monotonic()
    results = kernel_check._lower([tmp_path / "k.py"], {"PATH": ""}, 1.2, None, None)  # start-up: its own limit
    assert time.monotonic() - start < 30, "the hung config was not stopped"
    by_config = {result["config"]["X"]: result for result in results}
    assert list(by_config) == ["a", "b", "c"], results
    assert by_config["a"]["ok"] and by_config["c"]["ok"], results
    assert not by_config["b"]["ok"] and by_config["b"]["error"].startswith("the compiler hung in stage linalg"), results
    assert "no progress for 1 s" in by_config["b"]["error"], by_config["b"]["error"]


SLOW_START = """
import json, sys, time
skip = {arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--skip=")}
time.sleep(2)  # importing torch and triton-ascend: not any kernel's time
for key in ("a", "b"):
    if key in skip:
        continue
    event = {"event": "start", "key": key, "file": "k.py", "kernel": "k", "config": {"X": key}, "stage": "ttir"}
    print(json.dumps(event), flush=True)
    time.sleep(0.2 if key == "a" else 60)
    result = {"file": "k.py", "kernel": "k", "config": {"X": key}, "stage": "ttir", "ok": True, "error": None}
    print(json.dumps({"event": "result", "key": key, "result": result}), flush=True)
"""


def _by_config(results: list[dict[str, object]]) -> dict[tuple[object, object], dict[str, object]]:
    return {(r["file"], (r["config"] or {}).get("X")): r for r in results}  # type: ignore[union-attr]


def test_start_up_is_charged_to_no_kernel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue #44: a per-stage limit shorter than the worker's start-up killed it there, naming no kernel."""
    worker = tmp_path / "worker.py"
    worker.write_text(SLOW_START)
    monkeypatch.setattr(kernel_check, "WORKER", (str(worker),))
    results = _by_config(kernel_check._lower([tmp_path / "k.py"], {"PATH": ""}, 1.0, None, None, start_limit=30.0))
    assert results[("k.py", "a")]["ok"], results  # after a 2 s start-up under a 1 s stage limit
    hung = results[("k.py", "b")]
    assert not hung["ok"] and str(hung["error"]).startswith("the compiler hung in stage ttir"), results


def test_the_budget_stops_a_hung_stage_and_names_what_went_unchecked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue #44: a hanging stage cost the whole (900 s) limit per config, with no cap on the run."""
    worker = tmp_path / "worker.py"
    worker.write_text(SLOW_START)
    monkeypatch.setattr(kernel_check, "WORKER", (str(worker),))
    files = [tmp_path / "k.py", tmp_path / "never.py"]
    start = time.monotonic()
    results = _by_config(kernel_check._lower(files, {"PATH": ""}, 30.0, None, None, budget=5.0, start_limit=30.0))
    assert time.monotonic() - start < 15, "the budget did not stop the hung stage"
    stopped = results[("k.py", "b")]
    assert stopped["unchecked"] and "stopped in stage ttir: the check's budget of 5 s ran out" in str(stopped["error"])
    never = results[(str(tmp_path / "never.py"), None)]
    assert never["unchecked"] and "not checked: the check's budget of 5 s ran out" in str(never["error"]), results
