"""The codegen side of `--check-kernels`' workers: kernel files handed out one at a time from one queue to every
worker, a hung or dead config recorded and gone past in a new worker, started warm while the stage is still quiet."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.kernels.worker_protocol import Worker, exit_text, tail

NO_OUTPUT = (
    "(it printed nothing: a worker killed by a signal before any output points at a damaged triton-ascend "
    "install; its cache is checked against pip's RECORD on each run, docs/environment.md)"
)


@dataclass
class Run:
    """What every worker of one check shares: how to start one, the limits, and what they found."""

    command: list[str]
    env: dict[str, str]
    quiet_limit: float  # one stage without progress this long: hung
    start_limit: float  # a worker's start-up: charged to no kernel
    budget: float | None  # seconds for the whole check
    on_line: Callable[[str], None] | None
    environment: dict[str, Any] | None
    files: queue.Queue[Path] = field(default_factory=queue.Queue)
    results: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    spare: Worker | None = None  # started while a stage was quiet: warm for the config after a hang
    closed: bool = False
    deadline: float | None = None  # time.monotonic() when the budget ends

    def __post_init__(self) -> None:
        self.deadline = None if self.budget is None else time.monotonic() + self.budget

    def left(self, limit: float) -> float:
        return limit if self.deadline is None else min(limit, self.deadline - time.monotonic())

    def out_of_budget(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def record(self, result: dict[str, Any]) -> None:
        with self.lock:
            self.results.append(result)

    def take(self) -> Worker:
        """The warm spare if there is one, else a new worker."""
        with self.lock:
            worker, self.spare = self.spare, None
        return worker or Worker(self.command, self.env)

    def warm_spare(self) -> None:
        with self.lock:
            if self.spare is None and not self.closed:
                self.spare = Worker(self.command, self.env)

    def close(self) -> None:
        with self.lock:
            spare, self.spare, self.closed = self.spare, None, True
        if spare is not None:
            spare.finish()


def serve(run: Run) -> None:
    """One worker slot: take files from the queue until it is empty, each file's configs in a worker (a new one,
    the warm spare if there is one, after a config hangs or kills its worker)."""
    worker: Worker | None = None
    try:
        while not run.out_of_budget():
            try:
                path = run.files.get_nowait()
            except queue.Empty:
                return
            skip: list[str] = []
            while True:
                if worker is None:
                    worker = _ready(run, run.take())
                    if worker is None:
                        return  # it could not start (recorded): the other slots take the rest
                if not worker.send({"file": str(path), "skip": skip}):
                    _gone(run, worker, path, None, "it closed its input")
                    worker = None
                    break
                current, ended = _follow(run, worker, path, skip)
                if ended == "done":
                    break
                if ended == "budget":
                    _stopped(run, current, worker)
                    worker = None
                    return
                _gone(run, worker, path, current, ended)
                worker = None
                if current is None:
                    break  # it died between configs: the file is recorded so, the next goes on
                skip.append(current["key"])  # recorded as hung or dead: the next worker goes on after it
    finally:
        if worker is not None:
            worker.finish()


def _ready(run: Run, worker: Worker) -> Worker | None:
    """The worker once it says it is ready (its start-up is charged to no kernel), or None: it failed to start
    (recorded as a result with no file: torch_npu's environment, a damaged install, the start limit)."""
    while True:
        try:
            line = worker.next(run.left(run.start_limit))
        except queue.Empty:
            if run.out_of_budget():
                worker.stop()
                return None
            worker.stop()
            how = f"not ready in {run.start_limit:.0f} s (start-up)"
            run.record(failure(f"the triton-ascend worker failed ({how}):\n{NO_OUTPUT}"))
            return None
        if line is None:
            said = tail(worker.stop()) or NO_OUTPUT
            run.record(failure(f"the triton-ascend worker failed ({exit_text(worker.code or 0)}):\n{said}"))
            return None
        event = _event(run, line)
        if event.get("event") == "ready":
            return worker
        if event.get("event") == "result":  # its environment failed to load: it says so, then ends
            run.record({**event["result"], "lost": True})


def _follow(run: Run, worker: Worker, path: Path, skip: list[str]) -> tuple[dict[str, Any] | None, str]:
    """Read one file's events: (the config in work when it ended, how: "done", "budget", "hung", "died")."""
    current: dict[str, Any] | None = None
    while True:
        try:
            # half the limit quiet: a spare starts, warm by the time the stage is called hung
            line = worker.next(run.left(run.quiet_limit / 2))
        except queue.Empty:
            if run.out_of_budget():
                return current, "budget"
            run.warm_spare()
            try:
                line = worker.next(run.left(run.quiet_limit / 2))
            except queue.Empty:
                return current, "budget" if run.out_of_budget() else "hung"
        if line is None:
            return current, "died"
        event = _event(run, line)
        kind = event.get("event")
        if kind == "start":
            current = event
        elif kind == "result":
            run.record(event["result"])
            skip.append(event["key"])
            current = None
        elif kind == "done" and event.get("file") == str(path):
            return None, "done"


def _event(run: Run, line: str) -> dict[str, Any]:
    if run.on_line is not None:
        run.on_line(line)
    try:
        event = json.loads(line)
    except ValueError:
        return {}
    if not isinstance(event, dict):
        return {}
    if event.get("event") == "environment" and run.environment is not None:
        with run.lock:
            run.environment.update({key: value for key, value in event.items() if key != "event"})
    return event


def _gone(run: Run, worker: Worker, path: Path, current: dict[str, Any] | None, ended: str) -> None:
    """The worker hung or died: record the config in work (or, between configs, the file), and let it go."""
    stderr = worker.stop()
    if ended == "hung":
        how = "hung"
        stderr += f"\n(no progress for {run.quiet_limit:.0f} s: stopped)"
    else:
        how = f"died ({exit_text(worker.code)})" if worker.code is not None else f"died ({ended})"
    if current is None:
        message = f"the triton-ascend worker {how} outside any config:\n{tail(stderr) or NO_OUTPUT}"
        run.record(failure(message, str(path)))
        return
    run.record(_lost(current, f"the compiler {how} in stage {current['stage']}:\n{tail(stderr)}"))


def _stopped(run: Run, current: dict[str, Any] | None, worker: Worker) -> None:
    """The budget ran out in a config: record it as stopped, naming its kernel and stage."""
    worker.stop()
    if current is not None:
        run.record({**_lost(current, f"stopped in stage {current['stage']}: {budget_text(run)}"), "unchecked": True})


def _lost(current: dict[str, Any], error: str) -> dict[str, Any]:
    """The result of the config in work (its "start" event) that its worker never gave: hung, dead or stopped."""
    found = {key: current[key] for key in ("file", "kernel", "config")}
    return {**found, "stage": current.get("reached"), "ok": False, "error": error, "seconds": {}, "lost": True}


def budget_text(run: Run) -> str:
    return f"the check's budget of {run.budget or 0:.0f} s ran out"


def failure(message: str, file: str | None = None) -> dict[str, Any]:
    """A result no worker gave: of ``file`` as a whole (no config), or of none (the worker, the check itself)."""
    return {"file": file, "config": None, "stage": None, "ok": False, "error": message, "lost": True}
