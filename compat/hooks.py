"""Callbacks the orchestration (the roof) registers for modules it must not be imported by: run at deactivate(), and
the per-compile backend switch the option record calls. No imports, so the autoload entry point stays cheap."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# run by activation.deactivate(), in order; a module registers its callback once
ON_DEACTIVATE: list[Callable[[], None]] = []
# (requested backend or None, where the request came from) -> a context manager around one npu compile; set by
# activation as it loads (the only module that applies the record calling it)
_BACKEND_SWITCH: list[Callable[[str | None, str], Any]] = []


def on_deactivate(callback: Callable[[], None]) -> None:
    if callback not in ON_DEACTIVATE:
        ON_DEACTIVATE.append(callback)


def set_backend_switch(switch: Callable[[str | None, str], Any]) -> None:
    _BACKEND_SWITCH[:] = [switch]


def compiling_with_backend(requested: str | None, source: str) -> Any:
    """The registered switch's context manager for one npu compile (activation.compiling_with_backend)."""
    if not _BACKEND_SWITCH:
        raise RuntimeError("npu_inductor_compat: no backend switch registered: the activation module is not loaded")
    return _BACKEND_SWITCH[0](requested, source)
