"""Every fix record the package knows, read from the checked LINE of each version module named in ``LINES``
(loaded by the dispatcher: never ``common``); the fixes index and the README come from here."""

from __future__ import annotations

from npu_inductor_compat import lines
from npu_inductor_compat.dispatch import load_line
from npu_inductor_compat.patching import Patch


class RecordDeclarationError(RuntimeError):
    """A version module lists a record that is not written for its line, or two different records share an id."""


def line_fixes(line: str) -> tuple[Patch, ...]:
    """The records the version module ``line`` applies (its LINE's fixes), checked against each record's lines; a
    module without a well-formed LINE is a linespec.MalformedLineModule."""
    records = load_line(line).fixes
    for record in records:
        if line not in record.applies_to():
            raise RecordDeclarationError(
                f"{line} lists fix {record.id!r}, which is written for {', '.join(record.applies_to())} only"
            )
    return records


def fix_records(running: str | None = None) -> tuple[Patch, ...]:
    """Every line's records, each id once. The running line's objects come first (they carry its adapters); the
    other lines' own records follow, so the report can say whether upstream already has them here."""
    order = [line.module for line in lines.LINES]  # read at call time: LINES is the one table
    if running is not None:
        if running not in order:
            raise ValueError(f"unknown line {running!r}; lines: {', '.join(order)}")
        order.remove(running)
        order.insert(0, running)
    records: dict[str, tuple[str, Patch]] = {}
    for line in order:
        for record in line_fixes(line):
            seen = records.get(record.id)
            if seen is None:
                records[record.id] = (line, record)
            elif seen[1].lines != record.lines or seen[1].layer != record.layer:
                raise RecordDeclarationError(f"fix id {record.id!r} means different records in {seen[0]} and {line}")
    return tuple(record for _, record in records.values())
