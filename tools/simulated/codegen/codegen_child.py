"""`codegen`'s run in a forked child, while the parent holds --out's lock, waits, and says so when the child ended
without a report."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from npu_inductor_compat.tools.simulated.codegen.output import MANIFEST, Output, Refused


def in_a_child(output: Output, run: Callable[[], int]) -> int:
    """``run()`` (the script, then writing --out) in a forked child, while this process holds --out's lock and
    waits; the child's exit code, or 1 when it ended before writing summary.json.

    Why a child: the script runs in codegen's process, so a script that ends it early (os._exit, a signal, a fork
    whose parent exits) would otherwise end codegen with the script's status and no summary, unnoticed. The child
    reports its code on a pipe once --out is complete; no report is said and exits 1. A fork, not a new interpreter:
    torch is imported already, and nothing has run on it yet.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        _child(output, run, read_end, write_end)
    os.close(write_end)
    status = _wait(child)
    os.set_blocking(read_end, False)
    try:
        report = os.read(read_end, 32)
    except BlockingIOError:
        report = b""
    os.close(read_end)
    if report:
        return int(report)
    _say_no_report(output, os.waitstatus_to_exitcode(status))
    return 1


def _child(output: Output, run: Callable[[], int], read_end: int, write_end: int) -> NoReturn:
    """The child's side: ends here (os._exit, as multiprocessing's forked children do), never returns to a caller."""
    code = 1
    try:
        os.close(read_end)
        output.owner = os.getpid()
        try:
            code = run()
        except Refused as err:
            print(
                f"npu_inductor_compat codegen: {err}; stopped (the manifest lists what was written)",
                file=sys.stderr,
            )
        except KeyboardInterrupt:
            print("npu_inductor_compat codegen: interrupted (the manifest lists what was written)", file=sys.stderr)
            code = 130
        if os.getpid() == output.owner:
            os.write(write_end, str(code).encode())
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(child: int) -> int:
    """The child's wait status; SIGTERM to codegen ends the child too, Ctrl-C reaches the child from the terminal."""
    handlers: dict[int, Any] = {}
    try:
        handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, lambda signum, _: os.kill(child, signum))
        handlers[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: no handlers
        pass
    try:
        _, status = os.waitpid(child, 0)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return status


def _say_no_report(output: Output, code: int) -> None:
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"ended with status {code}"
    manifest = output.root / MANIFEST
    wrote = f"{manifest} lists every file codegen left there" if manifest.is_file() else "it wrote nothing"
    print(
        f"npu_inductor_compat codegen: the run {how} before summary.json was written (did the script call "
        f"os._exit, or fork and end?); {wrote}",
        file=sys.stderr,
    )


def end_a_forked_copy(output: Output) -> None:
    """A process the script forked that returns here (the script ended in it too) ends: only one process writes."""
    if os.getpid() != output.owner:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
