"""The kernel checks' worker processes and their parent: work in, a JSON message a line on the worker's stdin; one
JSON event a line out on its original stdout (anything else it prints goes to stderr); how a worker's end is told."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any

_channel: Any = None  # a worker's answers: stdout, or the channel open_channel set aside


def open_channel() -> None:
    """The worker's answers go to the original stdout; anything else printed (torch_npu's code, the compiler, even
    from C) goes to stderr, so it can never be read as an answer."""
    global _channel
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _channel = channel


def emit(event: dict[str, Any]) -> None:
    out = _channel or sys.stdout
    out.write(json.dumps(event, default=str) + "\n")
    out.flush()


def exit_text(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


class Worker:
    """One worker process fed work on its stdin, one JSON message a line; its stdout read a line at a time on a
    thread (:meth:`next`), its stderr kept in a file (:meth:`stop` gives it: a chatty stderr cannot block it)."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True, env=env
        )
        assert self.process.stdout is not None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=_pump, args=(self.process.stdout, self.lines), daemon=True)
        self.reader.start()
        self.code: int | None = None  # its exit code once its output ended; None while it runs or when killed

    def send(self, message: dict[str, Any]) -> bool:
        """Give it one piece of work; False when it is gone (its end is then read by :meth:`next`)."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def next(self, timeout: float) -> str | None:
        """Its next line; None when its output ended (it exited: ``code``); raises queue.Empty after ``timeout``
        seconds without one."""
        line = self.lines.get(timeout=max(timeout, 0.0))
        if line is None:
            self.code = self.process.wait()
        return line

    def finish(self, wait: float = 10.0) -> str:
        """Its input closed (a worker ends at the end of its input), given ``wait`` seconds to end, then stopped."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=wait)
        except (OSError, subprocess.TimeoutExpired):
            pass
        return self.stop()

    def stop(self) -> str:
        """End it (killed unless it already exited) and give what it wrote to stderr."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.reader.join(timeout=10)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self.errors.closed:
            return ""
        self.errors.seek(0)
        text = self.errors.read()
        self.errors.close()
        return text
