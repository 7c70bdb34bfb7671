"""The patch journal: every fix and layer is a `Patch` record applied and undone through one `Journal`."""

# A record says what it changes (targets), why, where upstream stands, which torch lines it is for, how to tell that
# upstream already has the fix (a probe) and when it can be deleted. Applying records the exact previous state
# (owner, name, existed, old object), so undo puts back the identical objects, last first.

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Hashable, Iterable, MutableMapping, MutableSequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeVar

from npu_inductor_compat.targets import Target, TargetAttributeMissing, TargetModuleMissing

log = logging.getLogger("npu_inductor_compat")


class Absent(enum.Enum):
    """The type of ``ABSENT``: marks an attribute or key that did not exist before a patch (falsy, one value)."""

    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = Absent.ABSENT


class PatchError(RuntimeError):
    """A patch could not be applied or undone; the message names the patch id."""


class PatchTargetMissing(PatchError, AttributeError):
    """A patch's target does not exist in the installed torch (the upstream code it expects has moved)."""


class ActivationFailed(PatchError):
    """A group of patches failed part-way; everything that group applied has been rolled back."""


class ReplacementRefused(PatchError):
    """A record's replacement of a function cannot be called every way the installed original can (its signature
    drifted upstream); nothing of the record was applied. ``patch_id`` and ``target`` name where."""

    def __init__(self, patch_id: str, target: str, reason: str) -> None:
        super().__init__(f"patch {patch_id!r}: the replacement of {target} does not fit the installed one: {reason}")
        self.patch_id, self.target, self.reason = patch_id, target, reason


def _refuse_a_misfit(patch_id: str, change: Change, old: Any, new: Any) -> None:
    """ReplacementRefused when ``new`` replaces a function or method ``old`` but cannot take every call it can."""
    if old is ABSENT or new is old or not callable(new):
        return
    from npu_inductor_compat.signatures import replacement_refusal  # here: only applying a record needs it

    reason = replacement_refusal(old, new)
    if reason is not None:
        raise ReplacementRefused(patch_id, change.target, reason)


ChangeKind = Literal["attr", "list_item", "dict_item", "registration"]


@dataclass(frozen=True)
class Change:
    """One edit to a live object.

    target: ``"package.module:Qual.name"`` (read by compat/targets.py): the module is imported, the rest walked.
    kind:
      - ``attr``: set the attribute ``Qual.name`` to ``replacement(old)`` (``old`` is ABSENT when it did not exist);
      - ``list_item``: the target is a list; add ``replacement(the list)`` to it unless already present;
      - ``dict_item``: the target is a dict; set ``[key]`` to ``replacement(old value or ABSENT)``;
      - ``registration``: the target is an upstream registration function; ``replacement(function)`` calls it, and
        the entries it writes under ``key`` in each dict named by ``touches`` are journaled (so undo is exact
        while upstream's own registration API does the work).
    key_at: for ``dict_item``/``registration``, the key as ``"module:Qual.name"`` of an object resolved when the
      change is applied (a key that needs an import, e.g. ``"torch:ops.higher_order.flex_attention"``), instead
      of ``key``.
    must_exist: for ``attr``/``dict_item``, whether a missing attribute or key is an error or a new entry.
    optional: a target whose module or owner does not exist on this torch is skipped instead of an error
      (for consumers that only some torch lines have).
    """

    target: str
    replacement: Callable[[Any], Any]
    kind: ChangeKind = "attr"
    key: Hashable = None
    must_exist: bool = True
    optional: bool = False
    touches: tuple[str, ...] = ()
    key_at: str | None = None

    def __post_init__(self) -> None:
        for target in (self.target, *self.touches, *((self.key_at,) if self.key_at is not None else ())):
            try:
                Target.parse(target)
            except ValueError as err:
                raise ValueError(f"change {err}") from None
        if self.kind not in ("attr", "list_item", "dict_item", "registration"):
            raise ValueError(f"change kind {self.kind!r} must be one of attr, list_item, dict_item, registration")
        if self.kind == "registration" and not self.touches:
            raise ValueError(f"registration change {self.target!r} must name the registries it touches")
        if self.key_at is not None and (self.kind not in ("dict_item", "registration") or self.key is not None):
            raise ValueError(f"change {self.target!r}: key_at is for a dict_item or registration change without key")

    def resolved_key(self, patch_id: str) -> Any:
        """The key this change writes: ``key``, or the object ``key_at`` names (PatchTargetMissing when absent)."""
        if self.key_at is None:
            return self.key
        try:
            return Target.parse(self.key_at).resolve()
        except (TargetModuleMissing, TargetAttributeMissing) as err:
            raise PatchTargetMissing(f"patch {patch_id!r}: the key {err}") from err

    def describe(self) -> str:
        if self.kind in ("dict_item", "registration"):
            return f"{self.target}[{self.key_at if self.key_at is not None else repr(self.key)}]"
        if self.kind == "list_item":
            return f"{self.target} (+item)"
        return self.target


@dataclass(frozen=True)
class Patch:
    """A fix or layer as data: what it changes, why, and when it can go."""

    id: str
    why: str
    upstream: str
    remove_when: str
    changes: tuple[Change, ...]
    # The version modules this record is written for; None: every line in lines.LINES (a shared
    # mechanism), so a new line gets it without editing the record.
    lines: tuple[str, ...] | None = None
    layer: str = "fix"
    # True when the installed torch already has the fix (then nothing is applied). Feature detection preferred.
    upstream_has_fix: Callable[[], bool] | None = None
    # Run after the changes are applied and after they are undone (e.g. clearing a cache that saw the old value).
    refresh: Callable[[], None] | None = None
    # Ids of records this one is useless or harmful without (e.g. a launch that reads what another record stores):
    # the journal refuses to apply it unless each is applied, in the same batch, or declared satisfied.
    requires: tuple[str, ...] = ()
    # For a record that patches another package's code (e.g. "torch_npu"), every change optional: when none of its
    # targets exists here, the record is "skipped", naming what is absent, before its probe runs.
    patches_package: str | None = None
    # The tests (pytest node ids, file::function) that run the patched path where the record applies and would fail
    # without it: the matrix's "applied" stands on them (empty: it says "applied (untested)").
    proven_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.id or not self.id.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"patch id {self.id!r} must be non-empty and use letters, digits, '-' and '_'")
        if not self.changes:
            raise ValueError(f"patch {self.id!r} changes nothing")
        for text, name in ((self.why, "why"), (self.upstream, "upstream"), (self.remove_when, "remove_when")):
            if not text.strip():
                raise ValueError(f"patch {self.id!r} needs a non-empty {name!r}")
        if self.id in self.requires:
            raise ValueError(f"patch {self.id!r} cannot require itself")
        if self.patches_package is not None and not all(change.optional for change in self.changes):
            raise ValueError(f"patch {self.id!r} patches {self.patches_package}: every change must be optional")

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(change.describe() for change in self.changes)

    def applies_to(self) -> tuple[str, ...]:
        """The version modules this record is written for (``lines``, else every line of ``LINES``)."""
        if self.lines is not None:
            return self.lines
        from npu_inductor_compat import lines  # here: the journal imports no line table until asked

        return tuple(line.module for line in lines.LINES)


def constant(value: Any) -> Callable[[Any], Any]:
    """A replacement that ignores the old value."""
    return lambda _old: value


_Replacement = TypeVar("_Replacement", bound=Callable[..., Any])


def wraps_original(original: Any) -> Callable[[_Replacement], _Replacement]:
    """Decorator for a replacement: keep the object it replaces reachable as ``__wrapped__``."""

    def mark(replacement: _Replacement) -> _Replacement:
        replacement.__wrapped__ = original  # type: ignore[attr-defined]
        return replacement

    return mark


def _resolve_owner(patch_id: str, change: Change) -> tuple[Any, str]:
    try:
        owner: tuple[Any, str] = Target.parse(change.target).owner()
    except (TargetModuleMissing, TargetAttributeMissing) as err:
        raise PatchTargetMissing(f"patch {patch_id!r}: {err}") from err
    return owner


def _own_value(owner: Any, name: str) -> Any:
    """The value as stored on the owner itself (class __dict__, so staticmethod/classmethod objects survive)."""
    if isinstance(owner, type):
        return owner.__dict__.get(name, ABSENT)
    try:
        return vars(owner).get(name, ABSENT)
    except TypeError:  # no __dict__ (slots, builtins): fall back to attribute access
        return getattr(owner, name, ABSENT)


def _registry(patch_id: str, target: str) -> MutableMapping[Any, Any] | None:
    try:
        owner, name = _resolve_owner(patch_id, Change(target, constant(None)))
    except PatchTargetMissing:
        return None
    found = getattr(owner, name, None)
    if found is None:
        return None
    if not isinstance(found, MutableMapping):
        raise PatchError(f"patch {patch_id!r}: registry {target!r} is a {type(found).__name__}, not a dict")
    return found


# ------------------------------------------------------------------------------------------------- edits
# One class per change kind: how it is applied, and the exact state it needs to be undone and redone.
class Edit:
    """One applied change, in the journal. ``undo`` restores the exact previous state; ``redo`` re-applies it."""

    kind: ClassVar[str]

    def __init__(self, patch_id: str, change: Change) -> None:
        self.patch_id = patch_id
        self.change = change

    @classmethod
    def apply(cls, patch_id: str, change: Change, owner: Any, name: str) -> Edit | None:
        raise NotImplementedError

    def undo(self) -> None:
        raise NotImplementedError

    def redo(self) -> None:
        raise NotImplementedError


class AttrEdit(Edit):
    """``owner.name = replacement(old)``; the old value is read from the owner's own ``__dict__``."""

    kind = "attr"

    def __init__(self, patch_id: str, change: Change, owner: Any, name: str, old: Any, new: Any) -> None:
        super().__init__(patch_id, change)
        self.owner, self.name, self.old, self.new = owner, name, old, new

    @classmethod
    def apply(cls, patch_id: str, change: Change, owner: Any, name: str) -> AttrEdit:
        old = _own_value(owner, name)
        if old is ABSENT and change.must_exist and not hasattr(owner, name):
            raise PatchTargetMissing(f"patch {patch_id!r}: target {change.target!r} does not exist")
        current = old if old is not ABSENT else getattr(owner, name, ABSENT)
        new = change.replacement(current)
        _refuse_a_misfit(patch_id, change, current, new)
        setattr(owner, name, new)
        return cls(patch_id, change, owner, name, old, new)

    def undo(self) -> None:
        current = _own_value(self.owner, self.name)
        if current is not self.new:
            # Documented choice: the original comes back even over a later third-party wrapper (it would otherwise
            # keep calling ours); the warning names the target.
            log.warning(
                "npu_inductor_compat: %s was replaced by someone else after patch %r; restoring the original anyway",
                self.change.target,
                self.patch_id,
            )
        if self.old is not ABSENT:
            setattr(self.owner, self.name, self.old)
        elif current is not ABSENT:
            delattr(self.owner, self.name)

    def redo(self) -> None:
        setattr(self.owner, self.name, self.new)


def _container(patch_id: str, change: Change, found: Any, expected: type, what: str) -> Any:
    """The list or dict a change edits in place: missing is PatchTargetMissing, another type a PatchError."""
    if found is ABSENT:
        raise PatchTargetMissing(f"patch {patch_id!r}: target {change.target!r} does not exist")
    if not isinstance(found, expected):
        raise PatchError(f"patch {patch_id!r}: {change.target!r} is a {type(found).__name__}, not {what}")
    return found


class ListItemEdit(Edit):
    """``replacement(the list)`` appended to a list unless already present (then nothing is journaled)."""

    kind = "list_item"

    def __init__(self, patch_id: str, change: Change, items: MutableSequence[Any], item: Any) -> None:
        super().__init__(patch_id, change)
        self.items, self.item = items, item

    @classmethod
    def apply(cls, patch_id: str, change: Change, owner: Any, name: str) -> ListItemEdit | None:
        items = _container(patch_id, change, getattr(owner, name, ABSENT), MutableSequence, "a list")
        item = change.replacement(items)
        if item in items:
            return None
        items.append(item)
        return cls(patch_id, change, items, item)

    def undo(self) -> None:
        for index in range(len(self.items) - 1, -1, -1):
            if self.items[index] is self.item or self.items[index] == self.item:
                del self.items[index]
                break

    def redo(self) -> None:
        self.items.append(self.item)


class DictItemEdit(Edit):
    """``the dict[key] = replacement(old value or ABSENT)``."""

    kind = "dict_item"

    def __init__(
        self, patch_id: str, change: Change, mapping: MutableMapping[Any, Any], key: Any, old: Any, new: Any
    ) -> None:
        super().__init__(patch_id, change)
        self.mapping, self.key, self.old, self.new = mapping, key, old, new

    @classmethod
    def apply(cls, patch_id: str, change: Change, owner: Any, name: str) -> DictItemEdit:
        mapping = _container(patch_id, change, getattr(owner, name, ABSENT), MutableMapping, "a dict")
        key = change.resolved_key(patch_id)
        old = mapping.get(key, ABSENT)
        if old is ABSENT and change.must_exist:
            raise PatchTargetMissing(f"patch {patch_id!r}: key {key!r} missing from {change.target!r}")
        new = change.replacement(old)
        _refuse_a_misfit(patch_id, change, old, new)
        mapping[key] = new
        return cls(patch_id, change, mapping, key, old, new)

    def undo(self) -> None:
        if self.old is not ABSENT:
            self.mapping[self.key] = self.old
        else:
            self.mapping.pop(self.key, None)

    def redo(self) -> None:
        self.mapping[self.key] = self.new


class RegistrationEdit(Edit):
    """Upstream's registration function does the work; what it writes under ``key`` in each touched registry is
    journaled (before and after), so undo and redo are exact."""

    kind = "registration"

    def __init__(self, patch_id: str, change: Change, registries: list[MutableMapping[Any, Any]]) -> None:
        super().__init__(patch_id, change)
        self.registries = registries
        self.key = change.resolved_key(patch_id)
        self.before = [registry.get(self.key, ABSENT) for registry in registries]
        self.after: list[Any] = list(self.before)

    @classmethod
    def apply(cls, patch_id: str, change: Change, owner: Any, name: str) -> RegistrationEdit:
        function = getattr(owner, name, ABSENT)
        if not callable(function):
            raise PatchTargetMissing(f"patch {patch_id!r}: registration function {change.target!r} does not exist")
        # Registries that do not exist on this torch line are simply not written by its registration function.
        registries = [found for target in change.touches if (found := _registry(patch_id, target)) is not None]
        edit = cls(patch_id, change, registries)
        try:
            change.replacement(function)
        except BaseException:
            edit.undo()
            raise
        edit.after = [registry.get(edit.key, ABSENT) for registry in registries]
        return edit

    @staticmethod
    def _put(registry: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        if value is ABSENT:
            registry.pop(key, None)
        else:
            registry[key] = value

    def undo(self) -> None:
        for registry, old in zip(self.registries, self.before, strict=True):
            self._put(registry, self.key, old)

    def redo(self) -> None:
        for registry, new in zip(self.registries, self.after, strict=True):
            self._put(registry, self.key, new)


EDITS: dict[str, type[Edit]] = {edit.kind: edit for edit in (AttrEdit, ListItemEdit, DictItemEdit, RegistrationEdit)}


def absent_targets(patch: Patch) -> str | None:
    """For a record with ``patches_package``: why there is nothing to patch here (none of its targets exists),
    naming the first target and the reason; None when a target exists (or the record patches no other package)."""
    if patch.patches_package is None:
        return None
    reasons = []
    for change in patch.changes:
        try:
            owner, name = _resolve_owner(patch.id, change)
        except PatchTargetMissing as err:
            reasons.append(str(err).removeprefix(f"patch {patch.id!r}: "))
            continue
        if hasattr(owner, name):
            return None
        reasons.append(f"target {change.target!r} does not exist")
    return f"{patch.patches_package}'s code is not here ({reasons[0]})"


def _apply_change(patch_id: str, change: Change) -> Edit | None:
    """Apply one change; None when there was nothing to do (a list item already present, an optional target)."""
    try:
        owner, name = _resolve_owner(patch_id, change)
    except PatchTargetMissing:
        if change.optional:
            return None
        raise
    if change.optional and not hasattr(owner, name):
        return None
    return EDITS[change.kind].apply(patch_id, change, owner, name)


def _refresh_quietly(patch: Patch) -> None:
    """Refresh after an undo or rollback: a failing refresh must not stop the rest of the restore."""
    if patch.refresh is None:
        return
    try:
        patch.refresh()
    except Exception as err:
        log.warning("npu_inductor_compat: refreshing after undoing %r failed: %r", patch.id, err)


class Journal:
    """Applied patches, in order, with everything needed to undo them exactly. Thread-safe."""

    def __init__(self) -> None:
        self._entries: list[Edit] = []
        self._applied: dict[str, Patch] = {}
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def is_applied(self, patch_id: str) -> bool:
        with self._lock:
            return patch_id in self._applied

    def applied(self) -> list[Patch]:
        """Applied patches in the order they were applied."""
        with self._lock:
            return list(self._applied.values())

    def apply(self, records: Iterable[Patch], *, satisfied: Iterable[str] = ()) -> list[Patch]:
        """Apply each record not yet applied, in order; all or nothing. Returns the newly applied records.

        A record whose ``requires`` are neither applied, in this batch, nor ``satisfied`` (e.g. upstream already has
        them) is refused before anything is applied."""
        with self._lock:
            records = list(records)
            present = set(self._applied) | {record.id for record in records} | set(satisfied)
            for record in records:
                absent = [needed for needed in record.requires if needed not in present]
                if absent:
                    raise PatchError(
                        f"patch {record.id!r} requires {', '.join(map(repr, absent))}, which would not be applied: "
                        f"{record.id!r} cannot work without it. Disable both or neither."
                    )
            start = len(self._entries)
            done: list[Patch] = []
            failed = "<none>"
            try:
                for record in records:
                    if record.id in self._applied:
                        continue
                    failed = record.id
                    for change in record.changes:
                        entry = _apply_change(record.id, change)
                        if entry is not None:
                            self._entries.append(entry)
                    self._applied[record.id] = record
                    done.append(record)
                    if record.refresh is not None:
                        record.refresh()
                    log.debug("npu_inductor_compat: applied %s -> %s", record.id, ", ".join(record.targets))
            except BaseException as err:
                self._rollback_to(start, done)
                log.warning(
                    "npu_inductor_compat: patch %r failed (%s); rolled back %d patch(es)", failed, err, len(done)
                )
                if isinstance(err, PatchError) or not isinstance(err, Exception):
                    raise  # ours already name the record; KeyboardInterrupt and SystemExit pass through unchanged
                raise ActivationFailed(f"patch {failed!r} failed: {type(err).__name__}: {err}") from err
            return done

    def _rollback_to(self, start: int, records: list[Patch]) -> None:
        while len(self._entries) > start:
            self._entries.pop().undo()
        for record in reversed(records):
            self._applied.pop(record.id, None)
            _refresh_quietly(record)

    def transition(
        self,
        undo_ids: Iterable[str],
        records: Iterable[Patch] | Callable[[], Iterable[Patch]],
        *,
        satisfied: Callable[[], Iterable[str]] = tuple,
    ) -> list[Patch]:
        """Undo ``undo_ids`` then apply ``records``, atomically: on failure the undone records come back exactly.

        ``records`` may be a callable, evaluated after the undo (so it can probe torch without our earlier changes);
        ``satisfied`` is called after it (requirements upstream already meets, see ``apply``).
        """
        with self._lock:
            wanted = set(undo_ids) & set(self._applied)
            kept_entries = [entry for entry in self._entries if entry.patch_id in wanted]
            kept_records = [record for record in self._applied.values() if record.id in wanted]
            self.undo(wanted)
            try:
                chosen = list(records() if callable(records) else records)
                return self.apply(chosen, satisfied=satisfied())
            except BaseException:
                # apply() already rolled itself back; put the previous state back with the very same objects.
                for entry in kept_entries:
                    entry.redo()
                    self._entries.append(entry)
                for record in kept_records:
                    self._applied[record.id] = record
                    _refresh_quietly(record)
                raise

    def undo(self, patch_ids: Iterable[str] | None = None) -> list[str]:
        """Undo the named patches (default: all), last applied first. Returns the ids undone."""
        with self._lock:
            wanted = set(self._applied) if patch_ids is None else set(patch_ids) & set(self._applied)
            undone: list[str] = []
            for entry in reversed(list(self._entries)):
                if entry.patch_id in wanted:
                    entry.undo()
                    self._entries.remove(entry)
            for patch_id in reversed(list(self._applied)):
                if patch_id in wanted:
                    patch = self._applied.pop(patch_id)
                    undone.append(patch_id)
                    _refresh_quietly(patch)
                    log.debug("npu_inductor_compat: undid %s", patch_id)
            return undone
