"""The one way a test runs `codegen`: a fresh interpreter, the clean child environment, its own working directory,
a timeout, and the run's summary.json read back (conftest.py's shared_codegen runs it once per pytest run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py

TIMEOUT = 900.0  # one codegen run, cold: the slowest (a model under torch_npu's codegen) takes minutes


class CodegenRun:
    """One `codegen` run's exit code, output streams, --out folder and summary (None when none was written)."""

    def __init__(self, returncode: int, stdout: str, stderr: str, out: Path | None) -> None:
        self.returncode, self.stdout, self.stderr, self.out = returncode, stdout, stderr, out
        summary = out / "summary.json" if out is not None else None
        self.summary: Any = json.loads(summary.read_text()) if summary is not None and summary.is_file() else None


def codegen_command(script: Path | str, *args: str, out: Path | None, provider: str | None = "stock") -> list[str]:
    """The command line run_codegen runs (for a test that must hold the process itself, e.g. to signal it)."""
    chosen = [] if provider is None or "--provider" in args else ["--provider", provider]
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script)]
    return [*command, *(["--out", str(out)] if out is not None else []), *chosen, *args]


def run_codegen(
    script: Path | str,
    *args: str,
    out: Path | None,
    provider: str | None = "stock",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> CodegenRun:
    """``codegen SCRIPT [--out OUT] [--provider PROVIDER] ARGS``. ``provider``: stock Inductor unless ARGS name one;
    None leaves codegen's default (torch_npu's codegen on a paired torch), as a user runs it. ``cwd``: default the
    folder ``out`` is in (never the checkout); ``env``: added to the clean child environment."""
    folder = cwd if cwd is not None else (out.parent if out is not None else None)
    done = subprocess.run(
        codegen_command(script, *args, out=out, provider=provider),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=folder,
        env=child_env(env),
    )
    return CodegenRun(done.returncode, done.stdout, done.stderr, out)
