"""`--check-kernels` calls a config hung only when one of its stages makes no progress for the limit, never because
a worker's many quick configs added up past it (a torch_npu kernel can bring hundreds of autotune configs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated.kernels import kernel_check

pytestmark = [pytest.mark.subprocess, pytest.mark.once]  # fake workers: no torch line's Inductor

# Stand-ins for kernel_lowering's worker speaking its protocol ("ready" once set up; then a JSON message a line on
# stdin naming a file and the config keys to skip; one JSON event a line back: "start" per config and stage,
# "result" per config, "done" per file): only the protocol is ours to fake, the real worker is tested against
# triton-ascend in test_kernel_check.py. SERVE reads the work; each stand-in defines CONFIGS(file), a list of
# (key, pauses per stage), and START, its start-up in seconds.
SERVE = """
import json, os, sys, time
def emit(event):
    print(json.dumps(event), flush=True)
time.sleep(START)  # importing torch and triton-ascend: not any kernel's time
ready = time.time()
emit({"event": "ready"})
for line in sys.stdin:
    work = json.loads(line)
    name = os.path.basename(work["file"])
    for key, pauses in CONFIGS(name):
        if key in work["skip"]:
            continue
        for stage, pause in zip(("ttir", "linalg"), pauses):
            emit({"event": "start", "key": key, "file": name, "kernel": "k", "config": {"X": key}, "stage": stage})
            time.sleep(pause)
        result = {"file": name, "kernel": "k", "config": {"X": key}, "stage": "linalg", "ok": True, "error": None,
                  "pid": os.getpid(), "ready": ready, "started": time.time() - sum(pauses)}
        emit({"event": "result", "key": key, "result": result})
    emit({"event": "done", "file": work["file"]})
"""
# config "a" takes two quick stages whose sum passes the limit, "b" hangs in its second stage, "c" is quick
FAKE_WORKER = "START = 0\nCONFIGS = lambda name: [('a', (0.8, 0.8)), ('b', (0.1, 60)), ('c', (0.1,))]\n" + SERVE


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


SLOW_START = "START = 2\nCONFIGS = lambda name: [('a', (0.2,)), ('b', (60,))]\n" + SERVE


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
    never = results[(str(tmp_path / "never.py"), None)]  # the one worker never took it
    assert never["unchecked"] and "not checked: the check's budget of 5 s ran out" in str(never["error"]), results


def test_after_a_hang_the_next_config_starts_in_a_warm_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue #44: after a hang, a new worker's start-up (torch, triton-ascend: seconds) came on top of the limit;
    a spare now starts once a stage has been quiet for half the limit, and is ready when the hang is called."""
    worker = tmp_path / "worker.py"
    worker.write_text("START = 0.5\nCONFIGS = lambda name: [('a', (0.1,)), ('b', (60,)), ('c', (0.1,))]\n" + SERVE)
    monkeypatch.setattr(kernel_check, "WORKER", (str(worker),))
    results = _by_config(kernel_check._lower([tmp_path / "k.py"], {"PATH": ""}, 4.0, None, None, start_limit=30.0))
    first, after = results[("k.py", "a")], results[("k.py", "c")]
    assert not results[("k.py", "b")]["ok"] and after["ok"], results
    assert after["pid"] != first["pid"], results
    # the spare was ready 1.5 s before it was given the work (spare at 2 s quiet, ready at 2.5 s, hang at 4 s)
    assert float(after["started"]) - float(after["ready"]) > 0.75, results  # type: ignore[arg-type]


def test_workers_take_the_next_file_when_done(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Kernels differ a lot in their configs (one torch_npu kernel has 150): a worker that is done takes the next
    file, where fixed shares left one worker idle while the other had the long kernels."""
    worker = tmp_path / "worker.py"
    configs = "lambda name: [('a', (3.0 if name == 'long.py' else 0.1,))]"
    worker.write_text(f"START = 0\nCONFIGS = {configs}\n" + SERVE)
    monkeypatch.setattr(kernel_check, "WORKER", (str(worker),))
    files = [tmp_path / name for name in ("long.py", "s1.py", "s2.py", "s3.py")]
    results = kernel_check._lower(files, {"PATH": ""}, 30.0, None, None, start_limit=30.0, workers=2)
    pids = {str(result["file"]): result["pid"] for result in results}
    assert len(results) == 4 and all(result["ok"] for result in results), results
    assert {pids["s1.py"], pids["s2.py"], pids["s3.py"]} == {pids["s1.py"]} != {pids["long.py"]}, pids
