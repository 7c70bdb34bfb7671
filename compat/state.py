"""The package's run-time state, in one object: what was resolved, what is applied, and the lock that orders it.

One ``STATE`` per process. Activation, the dispatcher and the zero-touch hook read and write it only under
``STATE.lock``; nothing else in the package keeps module-level mutable state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from npu_inductor_compat.patching import Journal

if TYPE_CHECKING:  # imported for annotations only: keeps `import torch`'s entry point cheap
    from npu_inductor_compat.activation import Decision
    from npu_inductor_compat.dispatch import LineChoice


@dataclass
class PackageState:
    # Orders activation, deactivation, backend switches and npu compiles (re-entrant: a compile may activate).
    lock: threading.RLock = field(default_factory=threading.RLock)
    # The records activate() applied; undone by deactivate().
    journal: Journal = field(default_factory=Journal)
    # The zero-touch hook (armed by the entry point, disarmed by deactivate()): a journal of its own, so undoing
    # an activation never disarms it.
    autoload_journal: Journal = field(default_factory=Journal)
    # The version module chosen for this process, and why (resolved once).
    resolution: tuple[LineChoice, ModuleType] | None = None
    active: bool = False
    backend: str | None = None
    disabled: frozenset[str] = frozenset()
    decisions: list[Decision] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def forget_activation(self) -> None:
        self.active = False
        self.backend = None
        self.disabled = frozenset()
        self.decisions = []
        self.skipped = []


STATE = PackageState()
