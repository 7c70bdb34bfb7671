"""The kernel check's progress from its workers' events: kernels and configs done, elapsed, an estimate of the time
left and the kernel in work; on a terminal one line refreshed every few seconds, else a line per kernel."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import IO, Any

REFRESH = 2.0  # seconds between two refreshes of the terminal line


class KernelProgress:
    """Fed every worker line (:meth:`line`, from any thread); :meth:`close` ends the terminal line."""

    def __init__(self, kernels: int, stream: IO[str] | None = None, clock: Any = time.monotonic) -> None:
        self.kernels, self.stream, self.clock = kernels, stream or sys.stderr, clock
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = self.shown = clock()
        self.done = self.configs = 0
        self.current: str | None = None
        self.totals: dict[str, tuple[int, int]] = {}  # file -> (configs it has, configs checked), from "done"
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        try:
            event = json.loads(text)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        with self.lock:
            kind = event.get("event")
            if kind == "start":
                self.current = event.get("kernel")
            elif kind == "result":
                self.configs += 1
            elif kind == "done" and str(event.get("file")) not in self.totals:  # a restarted worker says it again
                self.done += 1
                self.totals[str(event.get("file"))] = (int(event.get("configs", 0)), int(event.get("checked", 0)))
                if not self.tty:
                    finished = event.get("kernel") or event.get("file")
                    self._write(f"{self.status(None)}; {finished} done\n")
            if self.tty and self.clock() - self.shown >= REFRESH:
                self._write("\r" + self.status(self.current).ljust(120)[:160])

    def status(self, kernel: str | None) -> str:
        """``kernel check: 3/40 kernels, 57 configs, 12 s, about 148 s left; <kernel>``."""
        elapsed = self.clock() - self.started
        text = f"kernel check: {self.done}/{self.kernels} kernels, {self.configs} configs, {elapsed:.0f} s"
        if 0 < self.done < self.kernels:
            text += f", about {elapsed / self.done * (self.kernels - self.done):.0f} s left"
        return text + (f"; {kernel}" if kernel else "")

    def close(self) -> None:
        with self.lock:
            if self.tty and self.shown != self.started:
                self._write("\n")

    def _write(self, text: str) -> None:
        self.shown = self.clock()
        self.stream.write(text)
        self.stream.flush()
