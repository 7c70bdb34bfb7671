"""The codegen process's end of torch_npu's TTIR check and template precompile: :class:`TtirCheckWorker` sends each
kernel's source to one persistent triton-ascend worker (ttir_check_worker.py) and reads its answer."""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from npu_inductor_compat.tools.simulated.kernels.triton_ascend_site import (
    KernelCheckUnavailable,
    confine_triton,
    locate,
    worker_env,
)
from npu_inductor_compat.tools.simulated.kernels.ttir_check_worker import TTIR_WORKER
from npu_inductor_compat.tools.simulated.kernels.worker_protocol import exit_text, tail

START_TIMEOUT = 900.0  # the first start may build the simulated device; later ones take ~15 s
CHECK_TIMEOUT = 600.0  # one kernel's check takes well under a second


class TtirCheckWorker:
    """The codegen process's end of torch_npu's TTIR check: ``check(source)`` sends a kernel's source to a worker
    process that runs torch_npu's own check on it over triton-ascend (ttir_check_worker.py), and answers.

    What runs is torch_npu's code, from the wheel: ``NPUTritonScheduling.make_ttir_for_check``
    (_inductor/codegen/scheduling.py: the kernel named ``triton_``, loaded by Inductor's PyCodeCache) calls its
    autotuner's ``_triton_make_ttir`` (_inductor/runtime/triton_heuristics.py: one config, chosen by
    ``_select_ttir_test_config``), whose ``_make_ttir_module_from_cfg`` builds torch_npu's ASTSource and
    triton-ascend options and calls triton-ascend's ``ast_to_ttir`` (triton/compiler/code_generator.py). "failed" is
    what that raised (torch_npu's NoTritonConfigsError with the compiler's message), as on an NPU host.
    ``precompile(kernel, source)`` runs a template choice's precompile there (select_algorithm compiles each choice
    of a template in order and takes the first that compiles): its autotuner's configs through torch_npu's
    ``_precompile_config`` and triton-ascend's front end.

    One worker serves the whole run: started at the first check (it loads torch, torch_npu's backend and
    triton-ascend, about 15 s), kept for every later kernel, stopped by :meth:`close` (and at exit; a worker whose
    codegen process is gone stops at the end of its input). A worker that dies or hangs inside a check costs that
    check (an ``error`` naming how it ended, with its stderr's tail) and is started afresh for the next; one that
    cannot start makes every check an ``error`` saying why. Never a silent pass."""

    def __init__(self, release: str, target: str | None, start_timeout: float = START_TIMEOUT) -> None:
        self.release = release  # the torch_npu release the codegen process runs
        self.target = target  # "module:Class.method" of torch_npu's check; None: the release has none
        self.start_timeout = start_timeout
        self.check_timeout = CHECK_TIMEOUT
        self.info: dict[str, Any] = {
            "runs": f"{target or 'no TTIR check'} (torch_npu {release}'s own), and template precompiles, in a "
            "worker process over triton-ascend",
            "triton_ascend": None,
            "source": None,
            "unstubbed": [],
            "bridges": [],
            "starts": 0,
            "start_seconds": [],
            "missing_stubs": [],
            "error": None,
        }
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._threads: list[threading.Thread] = []
        self._cache: str | None = None
        self._unavailable: str | None = None
        self._requests = 0
        import atexit

        atexit.register(self.close)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            info: dict[str, Any] = json.loads(json.dumps(self.info))  # a copy
        return info

    def check(self, source: str) -> dict[str, Any]:
        """``result``: "passed", "failed" (``error``: the compiler's, ``traceback``: the worker's) or "error" (the
        check could not run: ``error`` says why); ``seconds``."""
        return self._request({"source": source})

    def precompile(self, kernel: str, source: str) -> dict[str, Any]:
        """A template choice's precompile, as torch_npu runs it on a host (ttir_check_worker.py _Precompiler):
        the answer of :meth:`check`, with ``configs`` (each config's stage reached and error) when it ran."""
        return self._request({"kind": "precompile", "kernel": kernel, "source": source})

    def _request(self, payload: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._unavailable is None and self._process is None:
                try:
                    self._start()
                except (KernelCheckUnavailable, OSError, RuntimeError) as err:
                    self._unavailable = self.info["error"] = f"the TTIR-check worker could not start: {err}"
                    self._stop()
            if self._unavailable is not None:
                return {"result": "error", "error": self._unavailable, "seconds": 0.0}
            assert self._process is not None and self._process.stdin is not None
            self._requests += 1
            began = time.perf_counter()
            try:
                self._process.stdin.write(json.dumps({"id": self._requests, **payload}) + "\n")
                self._process.stdin.flush()
                answer = self._answer(self.check_timeout)
            except (OSError, ValueError):  # its end of the pipe is closed: it died
                answer = None
            if answer is None or answer.get("event") != "checked" or answer.get("id") != self._requests:
                message = self._ended("while checking this kernel", answer)
                self._stop()  # the next check starts a fresh worker
                return {"result": "error", "error": message, "seconds": round(time.perf_counter() - began, 3)}
            for name in answer.get("missing_stubs", []):
                if name not in self.info["missing_stubs"]:
                    self.info["missing_stubs"].append(name)
            configs = {"configs": answer["configs"]} if "configs" in answer else {}
            if answer["ok"]:
                return {"result": "passed", "error": None, "seconds": answer["seconds"], **configs}
            return {
                "result": "error" if answer.get("worker_error") else "failed",
                "error": answer["error"],
                "traceback": answer.get("traceback"),
                "seconds": answer["seconds"],
            }

    def close(self) -> None:
        """Stop the worker (a later check starts a new one)."""
        with self._lock:
            self._stop()

    # -------------------------------------------------------------------------------------------- the process
    def _start(self) -> None:
        triton_ascend = locate()
        self.info["triton_ascend"], self.info["source"] = triton_ascend.version, triton_ascend.source
        env = worker_env(triton_ascend)
        self._cache = tempfile.mkdtemp(prefix="npu_ttir_check_")
        env["TORCHINDUCTOR_CACHE_DIR"] = self._cache  # PyCodeCache.load writes each checked kernel there
        confine_triton(env, self._cache)
        command = [sys.executable, "-m", "npu_inductor_compat.tools.simulated.kernels.ttir_check_worker", TTIR_WORKER]
        self._answers, self._stderr = queue.Queue(), collections.deque(maxlen=200)
        began = time.perf_counter()
        self._process = subprocess.Popen(
            [*command, self.release, self.target or ""],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.info["starts"] += 1
        self._threads = [
            threading.Thread(target=_read_answers, args=(self._process.stdout, self._answers), daemon=True),
            threading.Thread(target=_read_lines, args=(self._process.stderr, self._stderr), daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        ready = self._answer(self.start_timeout)
        if ready is None or ready.get("event") != "ready":
            raise RuntimeError(self._ended("while loading torch_npu over triton-ascend", ready))
        self.info["start_seconds"].append(round(time.perf_counter() - began, 1))
        self.info["unstubbed"], self.info["bridges"] = ready["unstubbed"], ready["bridges"]

    def _answer(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next answer; None when its output ended; {"event": "timeout"} when none came in time."""
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            return {"event": "timeout", "seconds": timeout}

    def _ended(self, when: str, answer: dict[str, Any] | None) -> str:
        """Why the worker gave no answer, with the tail of what it printed."""
        process = self._process
        if answer is not None and answer.get("event") == "failed":
            how = f"failed {when}: {answer['error']}"
        elif answer is not None and answer.get("event") == "timeout":
            how = f"gave no answer in {answer['seconds']:.0f} s {when} (stopped)"
        else:
            code = None
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = process.wait(timeout=10)
            how = f"died ({exit_text(code)}) {when}" if code is not None else f"stopped answering {when}"
        for thread in self._threads[1:]:
            thread.join(timeout=2)  # the rest of its stderr
        return f"the TTIR-check worker {how}:\n{tail(chr(10).join(self._stderr))}"

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.close()  # type: ignore[union-attr]  # the worker ends at the end of its input
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for thread in self._threads:
                thread.join(timeout=5)
        self._threads = []
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None


def _read_answers(stream: Any, answers: queue.Queue[dict[str, Any] | None]) -> None:
    for line in stream:
        with contextlib.suppress(ValueError):
            answers.put(json.loads(line))
    answers.put(None)


def _read_lines(stream: Any, lines: collections.deque[str]) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))
