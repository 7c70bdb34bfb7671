"""Every fix record the package knows, gathered from the modules that declare them.

Fix records live next to the code they belong to (``common`` for fixes shared by all lines, ``v*`` for a line's
own). Each such module exposes ``FIXES: tuple[Patch, ...]`` and must import cheaply on every torch line (torch is
only touched inside the records' callables). The index (`python -m npu_inductor_compat`, the README) is generated
from these records.
"""

from __future__ import annotations

import functools
import importlib

from npu_inductor_compat.dispatch import LINES
from npu_inductor_compat.patching import Patch

FIX_MODULES: tuple[str, ...] = ("common", *(line.module for line in LINES))


@functools.cache
def fix_records() -> tuple[Patch, ...]:
    """All fix records, in declaration order; ids are unique."""
    records: list[Patch] = []
    seen: dict[str, str] = {}
    for name in FIX_MODULES:
        module = importlib.import_module(f"npu_inductor_compat.{name}")
        for record in getattr(module, "FIXES", ()):
            if record.id in seen:
                raise RuntimeError(f"fix id {record.id!r} is declared by both {seen[record.id]} and {name}")
            seen[record.id] = name
            records.append(record)
    return tuple(records)
