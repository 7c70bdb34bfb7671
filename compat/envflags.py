"""One reader for every on/off environment switch of the package, so a typo is reported the same way everywhere."""

from __future__ import annotations

import os

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


EXPECTED = "expected 1/0 (or true/false, yes/no, on/off)"


def env_flag(
    name: str,
    default: bool,
    *,
    on: tuple[str, ...] = ON,
    off: tuple[str, ...] = OFF,
    expected: str = EXPECTED,
) -> bool:
    """The switch ``name``: unset or empty gives ``default``; anything but ``on``/``off`` (any case) is a ValueError
    naming the variable and, in ``expected``, the valid values. A switch another tool owns passes that tool's own
    narrower sets (e.g. triton-ascend's, read in npu_cpp_wrapper)."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if not value:
        return default
    if value in on:
        return True
    if value in off:
        return False
    raise ValueError(f"{name}={raw!r}: {expected}")
