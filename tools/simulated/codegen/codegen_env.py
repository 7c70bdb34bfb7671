"""The process state a `codegen` run sets around the script, each piece restored when the run ends: argv and path,
the compile settings, and loggers quietened where what they say is about CUDA, not the NPU."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def script_argv(script: Path, script_args: Sequence[str]) -> Iterator[None]:
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent.resolve()))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)  # a training script may chdir; codegen's own paths are absolute anyway


def codegen_settings(cpp_wrapper: bool, dynamic: bool) -> dict[str, dict[str, Any]]:
    """The config the run compiles with, in every thread (capture.capturing applies it)."""
    settings: dict[str, dict[str, Any]] = {"torch._inductor.config": {"cpp_wrapper": cpp_wrapper}}
    if dynamic:
        settings["torch._dynamo.config"] = {"assume_static_by_default": False}
    return settings


class _CudaOnlyNotes(logging.Filter):
    """Inductor's "Not enough SMs to use max_autotune_gemm mode" (torch/_inductor/utils.py, is_big_gpu) compares a
    device's multiprocessor count with a CUDA card's 68 SMs; an Ascend device reports its AI cores there, so the note
    says nothing about NPU code generation. It is dropped for the run; anything else Inductor logs passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "Not enough SMs to use max_autotune_gemm mode"


@contextmanager
def cuda_notes_dropped() -> Iterator[None]:
    logger, note = logging.getLogger("torch._inductor.utils"), _CudaOnlyNotes()
    logger.addFilter(note)
    try:
        yield
    finally:
        logger.removeFilter(note)


CUDA_NOTE = "No CUDA runtime is found"


class _WithoutCudaNote:
    """sys.stderr minus torch 2.7's printed CUDA note (its print writes the note, then the line end)."""

    def __init__(self, target: Any) -> None:
        self._target, self._dropped = target, False

    def write(self, text: str) -> int:
        dropped, self._dropped = self._dropped, text.startswith(CUDA_NOTE)
        if self._dropped or (dropped and text == "\n"):
            return len(text)
        return int(self._target.write(text))

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty: the real stream's
        return getattr(self._target, name)


@contextmanager
def cpp_extension_quiet() -> Iterator[None]:
    """torch's cpp_extension says "No CUDA runtime is found" when imported on a machine without CUDA: true, and
    irrelevant to a simulated NPU built for the CPU. torch 2.9 on logs it, torch 2.7.1 prints it: both are held back."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    level, stderr = logger.level, sys.stderr
    logger.setLevel(logging.ERROR)
    sys.stderr = _WithoutCudaNote(stderr)
    try:
        yield
    finally:
        logger.setLevel(level)
        sys.stderr = stderr
