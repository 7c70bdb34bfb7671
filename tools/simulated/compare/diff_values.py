"""Differences between two values of generated code's metadata (key by key) and between two texts (a capped
unified diff), each ready for the text report and the JSON one."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.patching import ABSENT  # a key present on one side only: shown as (absent)
from npu_inductor_compat.tools.simulated.compare.diff_sources import Construct, Unevaluated
from npu_inductor_compat.tools.simulated.compare.diff_text import align, unified


@dataclass
class Difference:
    """One value that differs: a summary field, an option, a fix status or a launch-metadata key."""

    key: str
    a: Any
    b: Any
    summary: str | None = None  # shown instead of the two values

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"key": self.key}
        for side in ("a", "b"):
            value = getattr(self, side)
            if value is not ABSENT:
                result[side] = _jsonable(value)
        return result

    def show(self, cap: int | None) -> str:
        if self.summary is not None:
            return f"{self.key}: {self.summary}"
        return f"{self.key}: {show_value(self.a, cap)} -> {show_value(self.b, cap)}"


def _moves(a: list[str], b: list[str]) -> str:
    """How argument list b differs from a, by position: ``+ks0 before xnumel; -XBLOCK``."""
    moves = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        where = f"before {a[i1]}" if i1 < len(a) else "at the end"
        if tag == "insert":
            moves.append(f"+{', '.join(b[j1:j2])} {where}")
        elif tag == "delete":
            moves.append(f"-{', '.join(a[i1:i2])}")
        elif tag == "replace":
            moves.append(f"{', '.join(a[i1:i2])} -> {', '.join(b[j1:j2])}")
    return "; ".join(moves)


def show_value(value: Any, cap: int | None) -> str:
    text = "(absent)" if value is ABSENT else repr(value)
    return text if cap is None or len(text) <= cap else text[: cap - 3] + "..."


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key if isinstance(key, str) else repr(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, frozenset | set):
        return sorted((_jsonable(item) for item in value), key=repr)
    if isinstance(value, Construct | Unevaluated):
        return repr(value)
    return value


def compare_values(a: Any, b: Any, key: str = "") -> list[Difference]:
    """Key-by-key differences of two metadata values (dicts and constructor calls recursively, lists of the same
    length item by item). A signature whose argument list differs also gets one change first saying where
    arguments were added, removed or replaced: the launch passes them by position."""
    if isinstance(a, Construct) and isinstance(b, Construct) and a.name == b.name:
        moved = compare_values(list(a.args), list(b.args), key) if a.args != b.args else []
        return moved + compare_values(dict(a.kwargs), dict(b.kwargs), key)
    if isinstance(a, dict) and isinstance(b, dict):
        changes: list[Difference] = []
        for name in [*a, *(name for name in b if name not in a)]:
            if isinstance(name, str):
                child = f"{key}.{name}" if key else name
            else:
                child = f"{key}[{name!r}]"
            changes += compare_values(a.get(name, ABSENT), b.get(name, ABSENT), child)
        if key.endswith("signature") and list(a) != list(b):
            changes.insert(0, Difference(f"{key} (arguments)", list(a), list(b), _moves(list(a), list(b))))
        return changes
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b) and type(a) is type(b):
        return [
            change for i, (x, y) in enumerate(zip(a, b, strict=True)) for change in compare_values(x, y, f"{key}[{i}]")
        ]
    return [] if _same(a, b) else [Difference(key, a, b)]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # 1 == True == 1.0 in Python, not in a kernel's metadata


@dataclass
class TextDiff:
    added: int
    removed: int
    lines: list[str]  # unified diff, capped
    omitted: int  # diff lines cut by the cap
    unaligned: int = 0  # lines (of both texts) too repetitive to align within the work cap: replaced whole

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    def to_json(self) -> dict[str, Any]:
        result = {"added": self.added, "removed": self.removed, "diff": self.lines, "omitted_lines": self.omitted}
        return {**result, "unaligned_lines": self.unaligned} if self.unaligned else result

    def counts(self) -> str:
        return f"{'at most ' if self.unaligned else ''}+{self.added} -{self.removed}"

    def note(self) -> str | None:
        if not self.unaligned:
            return None
        return (
            f"{self.unaligned} line(s) too repetitive to align in bounded time: shown as replaced whole, so the "
            "counts are upper bounds"
        )


def text_diff(a: str, b: str, context: int, cap: int | None) -> TextDiff:
    """The line diff of two texts (time linear in their size, see diff_text.py), its unified form capped."""
    if a == b:
        return TextDiff(0, 0, [], 0)
    a_lines, b_lines = a.splitlines(), b.splitlines()
    codes, unaligned = align(a_lines, b_lines)
    added = sum(j2 - j1 for tag, _, _, j1, j2 in codes if tag in ("replace", "insert"))
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in codes if tag in ("replace", "delete"))
    if not (added or removed):
        return TextDiff(0, 0, [], 0)
    lines = unified(a_lines, b_lines, codes, context)
    omitted = 0 if cap is None else max(0, len(lines) - cap)
    return TextDiff(added, removed, lines[:cap] if cap is not None else lines, omitted, unaligned)
