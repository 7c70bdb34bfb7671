"""The package's run-time state, in one object: what was resolved, what is applied, and the lock that orders it."""

# One ``STATE`` per process. Activation, the dispatcher and the zero-touch hook read and write it only under
# ``STATE.lock``; nothing else in the package keeps module-level mutable state.

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from npu_inductor_compat.patching import Journal, Patch

if TYPE_CHECKING:  # imported for annotations only
    from npu_inductor_compat.lines import LineChoice
    from npu_inductor_compat.linespec import LineSpec


@dataclass(frozen=True)
class Decision:
    """One record's status on this torch, as activation decided it (status() and the matrix report it)."""

    record: Patch
    status: str  # "applied", "not needed", "skipped", "missing", "refused" (its replacement does not fit here)
    detail: str

    def as_dict(self) -> dict[str, Any]:
        record = self.record
        return {
            "id": record.id,
            "layer": record.layer,
            "status": self.status,
            "detail": self.detail,
            "why": record.why,
            "upstream": record.upstream,
            "remove_when": record.remove_when,
            "lines": list(record.applies_to()),
            "targets": list(record.targets),
            "proven_by": list(record.proven_by),
        }


class PackageState:
    """What activation chose and applied, under one lock (the zero-touch hook keeps its own two originals:
    compat/autoload.py, which imports nothing else of the package)."""

    def __init__(self) -> None:
        # Orders activation, deactivation, backend switches and npu compiles (re-entrant: a compile may activate).
        self.lock = threading.RLock()
        # The records activate() applied; undone by deactivate().
        self.journal = Journal()
        # The version module chosen for this process, and why (resolved once): its checked LINE.
        self.resolution: tuple[LineChoice, LineSpec] | None = None
        self.active = False
        self.backend: str | None = None
        self.disabled: frozenset[str] = frozenset()
        self.decisions: list[Decision] = []
        self.skipped: list[tuple[str, str]] = []
        # npu compiles in progress, per thread: deactivate() from inside one (a custom pass, a fake) is refused
        self._compiles = threading.local()

    @contextlib.contextmanager
    def compiling(self) -> Iterator[None]:
        """Around one npu compile, in the thread that runs it (the caller holds ``lock``)."""
        self._compiles.depth = getattr(self._compiles, "depth", 0) + 1
        try:
            yield
        finally:
            self._compiles.depth -= 1

    def compiling_here(self) -> bool:
        return getattr(self._compiles, "depth", 0) > 0

    def forget_activation(self) -> None:
        self.active = False
        self.backend = None
        self.disabled = frozenset()
        self.decisions = []
        self.skipped = []


STATE = PackageState()
