"""The per-compile ``npu_backend`` option on the real Inductor pipeline (simulated NPU, fresh interpreters): it
switches the backend for npu graphs only, cannot race a concurrent compile, and a bad value is rejected before
anything is applied. The threaded flex answers are checked in-process."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from npu_compat_test_paths import TESTS

FAKES = TESTS / "fakes"

TWO_THREADS = r"""
import json, sys, threading
sys.path.insert(0, FAKES)
import torch
import npu_inductor_compat
from npu_inductor_compat.state import STATE
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.codegen.capture import capturing
from torch._inductor import scheduler

device.setup()
npu_inductor_compat.activate("triton")
seen = []
original = scheduler.Scheduler.create_backend


def create_backend(self, dev):
    backend = original(self, dev)
    if dev.type == "npu":
        seen.append((threading.current_thread().name, type(backend).__name__, STATE.backend))
    return backend


scheduler.Scheduler.create_backend = create_backend
barrier = threading.Barrier(2)
errors = []
OPTIONS = {"fx_graph_cache": False}


def work(backend, factor):
    try:
        barrier.wait()
        for step in range(3):
            x = torch.randn(16, device="npu")
            op = (torch.sin, torch.cos, torch.tanh)[step]
            compiled = torch.compile(lambda t: op(t * (factor + 2)) + 1, options={"npu_backend": backend, **OPTIONS})
            compiled(x)
    except BaseException as err:
        errors.append(repr(err))


with capturing() as capture:
    threads = [threading.Thread(target=work, args=(b, i), name=b) for i, b in enumerate(("triton", "ascendc"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print(json.dumps({"seen": seen, "errors": errors, "graph_errors": [g.error for g in capture.graphs if g.error]}))
"""


# torch releases where two threads calling torch.compile at once crash the process without this package (plain
# torch, CPU tensors, autoload off: SIGSEGV in FakeTensorMode.__enter__ under Dynamo; 2.10.0 in most runs, 2.11.0
# in every run; 2.7.1, 2.8.0, 2.9.1, 2.12.1 and newer did not).
CONCURRENT_COMPILE_CRASHES = {(2, 10), (2, 11)}


@pytest.mark.subprocess
def test_two_threads_compiling_for_different_backends_each_get_their_own(run_python: Any) -> None:
    """Thread "triton" and thread "ascendc" compile npu graphs at the same time, each with its own npu_backend
    option; every scheduling Inductor creates for a thread's graph is that thread's backend's (the ascendc stand-in
    registers AscendCScheduling, tests/fakes), and the package's backend during it is the thread's choice."""
    import torch

    from npu_inductor_compat.version import parse_release

    if parse_release(torch.__version__)[:2] in CONCURRENT_COMPILE_CRASHES:
        pytest.skip(f"torch {torch.__version__} itself crashes when two threads call torch.compile at once")
    done = run_python(TWO_THREADS.replace("FAKES", repr(str(FAKES))))
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["errors"] == [] and found["graph_errors"] == []
    seen = found["seen"]
    assert {thread for thread, _, _ in seen} == {"triton", "ascendc"} and len(seen) >= 4
    expected = {"triton": "TritonScheduling", "ascendc": "AscendCScheduling"}
    for thread, scheduling, backend in seen:
        assert (scheduling, backend) == (expected[thread], thread), seen


BAD_OPTION = r"""
import json, torch
import npu_inductor_compat
from npu_inductor_compat.autoload import armed

assert armed()
try:
    torch.compile(lambda t: t + 1, options={"npu_backend": "tritn"})
except ValueError as err:
    message = str(err)
else:
    message = None
status = npu_inductor_compat.status()
print(json.dumps({"message": message, "active": status["active"], "applied": status["applied"]}))
"""


@pytest.mark.subprocess
def test_a_bad_option_value_is_rejected_before_anything_is_applied(run_python: Any) -> None:
    """Zero-touch path (fresh interpreter, autoload on): the typo is rejected at torch.compile naming the option and
    the valid names, and the package is not activated by it."""
    done = run_python(BAD_OPTION, env={"NPU_INDUCTOR_COMPAT_AUTOLOAD": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["message"] is not None
    assert "torch.compile option 'npu_backend'" in found["message"] and "'tritn'" in found["message"]
    assert "valid: ascendc, default, dvm, mlir, triton" in found["message"]
    assert (found["active"], found["applied"]) == (False, [])


def test_flex_cuda_answers_are_scoped_to_the_thread_that_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """While one thread computes a flex config for "npu", torch.cuda's queries in another thread are CUDA's own
    (the answers are a ContextVar scope over journal-installed wrappers, not a global swap)."""
    import inspect
    import types

    import torch

    from npu_inductor_compat.common import flex
    from npu_inductor_compat.patching import Journal, Patch

    monkeypatch.setattr(flex, "_properties_of", lambda device_type: types.SimpleNamespace(major=9, minor=7))
    record = Patch(id="cuda-queries", why="w", upstream="u", remove_when="r", changes=flex.CUDA_QUERY_CHANGES)
    original = torch.cuda.get_device_capability
    journal = Journal()
    journal.apply([record])
    inside, outside = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def npu_thread() -> None:
        with flex.cuda_queries_answered_by("npu"):
            inside.set()
            outside.wait(10)
            results["npu"] = torch.cuda.get_device_capability()

    def other_thread() -> None:
        inside.wait(10)
        try:
            results["other"] = torch.cuda.get_device_capability()
        except Exception as err:  # no CUDA on this machine: CUDA's own error is the right answer
            results["other"] = type(err)
        outside.set()

    try:
        threads = [threading.Thread(target=npu_thread), threading.Thread(target=other_thread)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        try:
            expected: Any = original()
        except Exception as err:
            expected = type(err)
        assert results == {"npu": (9, 7), "other": expected}
        assert inspect.unwrap(torch.cuda.get_device_capability) is original
    finally:
        journal.undo()
    assert torch.cuda.get_device_capability is original


def test_flex_cuda_capability_for_a_device_without_one_is_the_generic_branch(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch_npu's device properties carry no CUDA compute capability (major/minor None); flex's CUDA-tuned config
    tables must then take their generic branch, (0, 0), not fail converting None (torch 2.7's _get_nv_config)."""
    import types

    import torch

    from npu_inductor_compat.common import flex
    from npu_inductor_compat.patching import Journal, Patch

    monkeypatch.setattr(flex, "_properties_of", lambda device_type: types.SimpleNamespace(major=None, minor=None))
    record = Patch(id="cuda-queries", why="w", upstream="u", remove_when="r", changes=flex.CUDA_QUERY_CHANGES)
    journal = Journal()
    journal.apply([record])
    try:
        with flex.cuda_queries_answered_by("npu"):
            assert torch.cuda.get_device_capability() == (0, 0)
    finally:
        journal.undo()
