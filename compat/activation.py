"""activate() / deactivate() / status(): choose the line, decide every record, apply through the journal."""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from npu_inductor_compat.dispatch import resolve
from npu_inductor_compat.patching import Journal, Patch, PatchError
from npu_inductor_compat.registry import fix_records
from npu_inductor_compat.version import installed_versions

log = logging.getLogger("npu_inductor_compat")

DISABLE_ENV = "NPU_INDUCTOR_COMPAT_DISABLE"


@dataclass(frozen=True)
class Plan:
    """What a version module wants applied for one backend (the device and backend layers), in order."""

    backend: str | None
    layers: tuple[Patch, ...]
    # Things not done, with the reason (e.g. a provider package that is not installed).
    skipped: tuple[tuple[str, str], ...] = ()
    # Every layer record id this module knows, for validating NPU_INDUCTOR_COMPAT_DISABLE.
    known_ids: frozenset[str] = frozenset()


class LineModule(Protocol):
    def backend_plan(self, backend: str | None) -> Plan: ...

    def normalise_backend(self, name: object, source: str) -> str: ...

    def codegen_main(self, argv: list[str]) -> int: ...


@dataclass(frozen=True)
class Decision:
    record: Patch
    status: str  # "applied", "not needed", "skipped", "missing"
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
            "lines": list(record.lines),
            "targets": list(record.targets),
        }


@dataclass
class _State:
    journal: Journal = field(default_factory=Journal)
    active: bool = False
    backend: str | None = None
    disabled: frozenset[str] = frozenset()
    decisions: list[Decision] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


_state = _State()


def disabled_ids(known: set[str], extra: Iterable[str] = ()) -> frozenset[str]:
    """Ids named in NPU_INDUCTOR_COMPAT_DISABLE (and ``extra``); an id that names no record is an error."""
    raw = os.environ.get(DISABLE_ENV, "")
    from_env = {part.strip() for part in raw.split(",") if part.strip()}
    extra = set(extra)
    for source, wanted in ((DISABLE_ENV, from_env), ("disable=", extra)):
        unknown = sorted(wanted - known)
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise ValueError(f"{source} names unknown fix id(s) {names}; valid ids: {', '.join(sorted(known))}")
    return frozenset(from_env | extra)


def _decide(record: Patch, line: str, disabled: frozenset[str], journal: Journal) -> Decision:
    if record.id in disabled:
        return Decision(record, "skipped", f"disabled by {DISABLE_ENV}")
    if journal.is_applied(record.id):
        return Decision(record, "applied", "")  # its probe would now see our own change
    if record.upstream_has_fix is not None:
        try:
            has_fix = record.upstream_has_fix()
        except Exception as err:
            raise PatchError(f"patch {record.id!r}: probing whether upstream has the fix failed: {err!r}") from err
        if has_fix:
            return Decision(record, "not needed", "upstream has it")
    if line not in record.lines:
        if record.upstream_has_fix is None:
            return Decision(record, "skipped", f"written for {', '.join(record.lines)}; not for {line}")
        return Decision(
            record, "missing", f"upstream lacks it on this torch, but the fix is only for {', '.join(record.lines)}"
        )
    return Decision(record, "applied", "")


def activate(backend: str | None = None, *, disable: Iterable[str] = ()) -> dict[str, Any]:
    """Apply the device layer, the backend's layers and the line's fixes for the installed torch; return status().

    Idempotent; calling it with another backend switches layers. ``disable`` skips records by id, like
    NPU_INDUCTOR_COMPAT_DISABLE. On any failure torch is left as it was before the call and the error names the
    record that failed.
    """
    journal = _state.journal
    with journal.lock:
        choice, module = resolve()
        line = choice.line.module
        plan: Plan = module.backend_plan(backend)
        records = fix_records()
        known = {record.id for record in records} | set(plan.known_ids) | {patch.id for patch in plan.layers}
        disabled = disabled_ids(known, disable)
        decisions: list[Decision] = []

        def decide() -> list[Patch]:
            decisions[:] = [_decide(record, line, disabled, journal) for record in (*plan.layers, *records)]
            return [decision.record for decision in decisions if decision.status == "applied"]

        def upstream_has() -> set[str]:  # a requirement upstream already meets needs no record of ours
            return {decision.record.id for decision in decisions if decision.status == "not needed"}

        if _state.active and (plan.backend, disabled) == (_state.backend, _state.disabled):
            # same selection: idempotent, already-applied records stay as they are
            journal.apply(decide(), satisfied=upstream_has())
        else:
            # A new selection is decided on torch without our earlier changes (a probe must see upstream, not us),
            # so everything is undone first, and put back exactly if the new activation fails.
            journal.transition([patch.id for patch in journal.applied()], decide, satisfied=upstream_has)
        _state.active = True
        _state.disabled = disabled
        _state.backend = plan.backend
        _state.decisions = decisions
        _state.skipped = list(plan.skipped)
        for decision in decisions:
            log.info("npu_inductor_compat: %s %s %s", decision.record.id, decision.status, decision.detail)
        for what, why in plan.skipped:
            log.info("npu_inductor_compat: skipped %s: %s", what, why)
        return status()


def switch_backend(requested: str, source: str) -> None:
    """Switch the active package to ``requested`` if it is active with another backend (per-compile option)."""
    with _state.journal.lock:
        if not _state.active:
            return
        module = resolve()[1]
        wanted = module.normalise_backend(requested, source)
        if wanted != _state.backend:
            log.info("npu_inductor_compat: %s selects backend %r (was %r)", source, wanted, _state.backend)
            activate(wanted, disable=_state.disabled)


def is_active() -> bool:
    return _state.active


def deactivate() -> list[str]:
    """Undo everything activate() applied, last first, and disarm zero-touch activation. Returns the ids undone."""
    from npu_inductor_compat.autoload import disarm

    with _state.journal.lock:
        undone = _state.journal.undo()
        disarm()
        _state.active = False
        _state.backend = None
        _state.disabled = frozenset()
        _state.decisions = []
        _state.skipped = []
        return undone


def status() -> dict[str, Any]:
    """A JSON-serialisable picture of what is chosen and applied."""
    from npu_inductor_compat import __version__
    from npu_inductor_compat.dispatch import choose_line

    versions: dict[str, Any] = {"npu_inductor_compat": __version__, "python": platform.python_version()}
    versions.update(installed_versions())
    with _state.journal.lock:
        choice = choose_line()
        return {
            "versions": versions,
            "line": choice.line.module,
            "line_reason": choice.reason,
            "untested": choice.untested,
            "active": _state.active,
            "backend": _state.backend,
            "applied": [
                {"id": patch.id, "layer": patch.layer, "targets": list(patch.targets)}
                for patch in _state.journal.applied()
            ],
            "fixes": [decision.as_dict() for decision in _state.decisions],
            "skipped": [{"what": what, "why": why} for what, why in _state.skipped],
        }
