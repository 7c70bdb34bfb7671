"""activate() / deactivate() / status(): choose the line, decide every record, apply through the journal."""

from __future__ import annotations

import contextlib
import logging
import os
import platform
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from npu_inductor_compat import hooks
from npu_inductor_compat.common.composition.backend_table import BackendChoice, choose
from npu_inductor_compat.common.composition.backends import backend_plan
from npu_inductor_compat.dispatch import refuse_a_foreign_line, resolve
from npu_inductor_compat.lines import LineChoice
from npu_inductor_compat.linespec import Plan
from npu_inductor_compat.patching import Journal, Patch, PatchError, ReplacementRefused, absent_targets
from npu_inductor_compat.registry import fix_records
from npu_inductor_compat.state import STATE, Decision
from npu_inductor_compat.version import TORCH_VERSION_ENV, installed_versions

log = logging.getLogger("npu_inductor_compat")

DISABLE_ENV = "NPU_INDUCTOR_COMPAT_DISABLE"


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
    absent = absent_targets(record)
    if absent is not None:
        return Decision(record, "skipped", f"nothing to patch: {absent}")
    if record.upstream_has_fix is not None:
        try:
            has_fix = record.upstream_has_fix()
        except Exception as err:
            raise PatchError(f"patch {record.id!r}: probing whether upstream has the fix failed: {err!r}") from err
        if has_fix:
            return Decision(record, "not needed", "upstream has it")
    written_for = ", ".join(record.applies_to())
    if line not in record.applies_to():
        if record.upstream_has_fix is None:
            return Decision(record, "skipped", f"written for {written_for}; not for {line}")
        return Decision(record, "missing", f"upstream lacks it on this torch, but the fix is only for {written_for}")
    return Decision(record, "applied", "")


def activate(backend: str | None = None, *, disable: str | Iterable[str] | None = ()) -> dict[str, Any]:
    """Apply the device layer, the backend's layers and the line's fixes for the installed torch; return status().

    Idempotent; calling it with another backend switches layers. ``disable`` skips records by id, like
    NPU_INDUCTOR_COMPAT_DISABLE: ids, or one string read as that variable is (comma-separated ids); None disables
    nothing. An unknown id is a ValueError listing the valid ids. On any failure torch is left as it was before the
    call and the error names the record that failed.
    """
    ids = _disable_ids(disable)
    return _activate(None if backend is None else choose(backend, "activate(backend=...)"), ids)


def _disable_ids(disable: object) -> tuple[str, ...]:
    """``disable=`` as a tuple of ids; a TypeError naming what it takes for anything else."""
    if disable is None:
        return ()
    if isinstance(disable, str):  # iterated, it would be its characters
        return tuple(part.strip() for part in disable.split(",") if part.strip())
    takes = "disable= takes fix ids (an iterable of strings), one string of comma-separated ids, or None"
    if not isinstance(disable, Iterable):
        raise TypeError(f"{takes}, not {type(disable).__name__}")
    ids = tuple(disable)
    wrong = [item for item in ids if not isinstance(item, str)]
    if wrong:
        raise TypeError(f"{takes}; got {wrong[0]!r} ({type(wrong[0]).__name__}) among them")
    return ids


def _activate(backend: BackendChoice | None, disable: Iterable[str]) -> dict[str, Any]:
    journal = STATE.journal
    with STATE.lock:
        choice, spec = resolve()
        refuse_a_foreign_line(choice)  # before anything is applied
        line = spec.name
        plan: Plan = backend_plan(backend, spec.adapters)
        records = fix_records(line)
        known = {record.id for record in records} | set(plan.known_ids) | {record.id for record in plan.layers}
        disabled = disabled_ids(known, disable)
        decisions: list[Decision] = []
        refused: dict[str, str] = {}  # record id -> why its replacement does not fit what it replaces here

        def decide() -> list[Patch]:
            decisions[:] = [
                Decision(record, "refused", refused[record.id])
                if record.id in refused
                else _decide(record, line, disabled, journal)
                for record in (*plan.layers, *records)
            ]
            return [decision.record for decision in decisions if decision.status == "applied"]

        def upstream_has() -> set[str]:  # a requirement upstream already meets needs no record of ours
            return {decision.record.id for decision in decisions if decision.status == "not needed"}

        while True:  # a refused record is left out and the rest applied again (each attempt is all or nothing)
            try:
                _apply_decided(journal, plan, disabled, decide, upstream_has)
                break
            except ReplacementRefused as err:
                if err.patch_id in refused:
                    raise
                refused[err.patch_id] = f"{err.target}: {err.reason}"
                log.warning("npu_inductor_compat: %s; that record is not applied", err)
        STATE.active = True
        STATE.disabled = disabled
        STATE.backend = plan.backend
        STATE.decisions = decisions
        STATE.skipped = list(plan.skipped)
        for decision in decisions:
            log.info("npu_inductor_compat: %s %s %s", decision.record.id, decision.status, decision.detail)
        for what, why in plan.skipped:
            log.info("npu_inductor_compat: skipped %s: %s", what, why)
        return status()


def _apply_decided(
    journal: Journal,
    plan: Plan,
    disabled: frozenset[str],
    decide: Callable[[], list[Patch]],
    upstream_has: Callable[[], set[str]],
) -> None:
    if STATE.active and (plan.backend, disabled) == (STATE.backend, STATE.disabled):
        # same selection: idempotent, already-applied records stay as they are
        journal.apply(decide(), satisfied=upstream_has())
        return
    # A new selection is decided on torch without our earlier changes (a probe must see upstream, not us), so
    # everything is undone first, and put back exactly if the new activation fails. The config layer is the same for
    # every selection and stays (unless now disabled): another thread's torch.compile checks its options against it
    # at any moment, and must never find the npu_backend option gone mid-switch.
    staying = {record.id for record in plan.layers if record.layer == "config"} - disabled
    undo = [record.id for record in journal.applied() if record.id not in staying]
    journal.transition(undo, decide, satisfied=upstream_has)


def _override_report(choice: LineChoice) -> dict[str, Any] | None:
    """NPU_INDUCTOR_COMPAT_TORCH_VERSION as the resolved choice used it (None when the line follows the installed
    torch)."""
    if choice.version.source != TORCH_VERSION_ENV:
        return None
    return {
        "variable": TORCH_VERSION_ENV,
        "value": choice.version.text,
        "installed": choice.installed,
        "differs": choice.override_warning is not None,
        "warning": choice.override_warning,
    }


@contextlib.contextmanager
def compiling_with_backend(requested: str | None, source: str) -> Iterator[None]:
    """Around one npu compile: switch the active package to ``requested`` (if given and different) and hold the
    package lock until the compile ends, so a concurrent compile cannot switch the layers under this one. The
    backend stays selected afterwards (the option selects "for that compile and after"). Does nothing to an
    inactive package."""
    with STATE.lock:
        if STATE.active and requested is not None:
            wanted = choose(requested, source)
            if wanted.name != STATE.backend:
                log.info("npu_inductor_compat: %s selects backend %r (was %r)", source, wanted.name, STATE.backend)
                _activate(wanted, STATE.disabled)
        with STATE.compiling() if STATE.active else contextlib.nullcontext():
            yield


hooks.set_backend_switch(
    compiling_with_backend
)  # the per-compile option record reaches it here (common/composition/option.py)


class DeactivateDuringCompile(RuntimeError):
    """deactivate() was called from inside an npu compile (a custom pass, a fake, a hook the compile runs)."""


def deactivate() -> list[str]:
    """Undo everything activate() applied, last first, and disarm zero-touch activation. Returns the ids undone.

    Afterwards torch is as without the package: an npu graph compiled after this fails as stock Inductor does,
    and its backward compiled later (at its first ``.backward()``) raises CompiledAfterDeactivate. Called from
    inside an npu compile it raises DeactivateDuringCompile and undoes nothing (the compile needs every layer).
    """
    with STATE.lock:
        if STATE.compiling_here():
            raise DeactivateDuringCompile(
                "npu_inductor_compat.deactivate() was called during an npu compile (from code the compile runs: a "
                "custom pass, a fake kernel, a hook); that compile needs the NPU layers to its end, so nothing was "
                "undone. Call deactivate() after torch.compile's call has returned."
            )
        undone = STATE.journal.undo()
        for callback in list(hooks.ON_DEACTIVATE):  # the zero-touch hook's disarm, once it was armed
            callback()
        STATE.forget_activation()
        return undone


def is_active() -> bool:
    return STATE.active


def status() -> dict[str, Any]:
    """A JSON-serialisable picture of what is chosen and applied."""
    from npu_inductor_compat import __version__

    versions: dict[str, Any] = {"npu_inductor_compat": __version__, "python": platform.python_version()}
    versions.update(installed_versions())
    with STATE.lock:
        # the line this process resolved (once), never a re-read of the environment
        choice = resolve()[0]
        return {
            "versions": versions,
            "line": choice.line.module,
            "line_reason": choice.reason,
            "untested": choice.untested,
            "torch_override": _override_report(choice),
            "active": STATE.active,
            "backend": STATE.backend,
            "applied": [
                {"id": record.id, "layer": record.layer, "targets": list(record.targets)}
                for record in STATE.journal.applied()
            ],
            "fixes": [decision.as_dict() for decision in STATE.decisions],
            "skipped": [{"what": what, "why": why} for what, why in STATE.skipped],
        }
