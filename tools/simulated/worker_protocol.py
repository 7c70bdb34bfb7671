"""The kernel checks' worker processes and their parent: one JSON event a line on the worker's original stdout
(anything else it prints goes to stderr), and how a worker's end is told."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

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
