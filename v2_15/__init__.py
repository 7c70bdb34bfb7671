"""Version module for torch 2.15.x and newer: no DEVICE_TO_ATEN (device_to_aten() asks the op overrides), a device-
driven cpp_wrapper two-pass check.

The composition root of its line: the shared records of common built with this line's adapters, plus its own.
"""

from __future__ import annotations

from npu_inductor_compat.activation import Plan
from npu_inductor_compat.common import compose
from npu_inductor_compat.patching import Patch
from npu_inductor_compat.v2_15.adapters import ADAPTERS

LINE = "v2_15"

# Every fix record this line applies: the shared ones, then its own.
FIXES: tuple[Patch, ...] = compose.shared_fixes(ADAPTERS)


def backend_plan(backend: str | None, source: str | None = None) -> Plan:
    return compose.backend_plan(backend, ADAPTERS, source)


normalise_backend = compose.normalise_backend

__all__ = ["ADAPTERS", "FIXES", "LINE", "backend_plan", "normalise_backend"]
