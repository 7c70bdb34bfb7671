"""One reader for every on/off environment switch of the package, so a typo is reported the same way everywhere."""

from __future__ import annotations

import os

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


def env_flag(name: str, default: bool) -> bool:
    """The switch ``name``: unset or empty gives ``default``; anything but ON/OFF (any case) is a ValueError naming
    the variable and the valid values."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if not value:
        return default
    if value in ON:
        return True
    if value in OFF:
        return False
    raise ValueError(f"{name}={raw!r}: expected 1/0 (or true/false, yes/no, on/off)")
