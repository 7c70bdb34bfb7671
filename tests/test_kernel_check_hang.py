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
    results = kernel_check._lower([tmp_path / "k.py"], {"PATH": ""}, 1.2, None, None)
    assert time.monotonic() - start < 30, "the hung config was not stopped"
    by_config = {result["config"]["X"]: result for result in results}
    assert list(by_config) == ["a", "b", "c"], results
    assert by_config["a"]["ok"] and by_config["c"]["ok"], results
    assert not by_config["b"]["ok"] and by_config["b"]["error"].startswith("the compiler hung in stage linalg"), results
    assert "no progress for 1 s" in by_config["b"]["error"], by_config["b"]["error"]
