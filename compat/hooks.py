"""Callbacks the orchestration runs at deactivate(), registered by modules it must not import (the zero-touch hook
imports activation when it fires): one list, no imports, so the entry point stays cheap."""

from __future__ import annotations

from collections.abc import Callable

# run by activation.deactivate(), in order; a module registers its callback once
ON_DEACTIVATE: list[Callable[[], None]] = []


def on_deactivate(callback: Callable[[], None]) -> None:
    if callback not in ON_DEACTIVATE:
        ON_DEACTIVATE.append(callback)
