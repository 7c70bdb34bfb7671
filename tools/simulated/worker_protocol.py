"""The kernel checks' worker processes and their parent: one JSON event a line on the worker's original stdout
(anything else it prints goes to stderr), and how a worker's end is told."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
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


def run_worker(
    command: list[str],
    env: dict[str, str],
    quiet_limit: float,
    start_limit: float | None = None,
    deadline: float | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[str, str, int | None, str]:
    """Run a worker to its end: its stdout, stderr, exit code and how it ended ("exited"; "quiet": ``quiet_limit``
    seconds without a line of output after its first (one event per config and stage: a stage that long is hung);
    "start": no first line within ``start_limit``, its start-up charged to no kernel; "budget": the monotonic
    ``deadline`` passed). The code is None when it was killed. A long run of quick steps is never cut short.
    ``on_line`` is given each line as it comes (progress)."""
    import time

    with tempfile.TemporaryFile(mode="w+") as errors:  # a file: a chatty stderr cannot block the worker
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        assert process.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
        reader.start()
        out: list[str] = []
        code: int | None = None
        ready = start_limit is None
        ended = "exited"
        while True:
            limit = quiet_limit if ready else float(start_limit or quiet_limit)
            if deadline is not None:
                limit = min(limit, max(deadline - time.monotonic(), 0.0))
            try:
                line = lines.get(timeout=limit)
            except queue.Empty:
                out_of_budget = deadline is not None and time.monotonic() >= deadline
                ended = "budget" if out_of_budget else ("quiet" if ready else "start")
                process.kill()
                process.wait()
                break
            if line is None:
                code = process.wait()
                break
            ready = True  # its first line ends the start-up
            out.append(line)
            if on_line is not None:
                on_line(line)
        reader.join(timeout=10)
        process.stdout.close()
        errors.seek(0)
        return "".join(out), errors.read(), code, ended
