"""Version module for torch 2.7.x-2.8.x: flex attention in kernel/flex_attention.py with a plain backward grid (this
line's own fixes in flex.py), unnamed option entries, built-in op overrides loaded before registering npu.

The composition root of its line: the shared records of common built with this line's adapters, plus its own.
"""

from __future__ import annotations

from npu_inductor_compat.activation import Plan
from npu_inductor_compat.common import compose
from npu_inductor_compat.patching import Patch
from npu_inductor_compat.v2_7_1 import flex
from npu_inductor_compat.v2_7_1.adapters import ADAPTERS

LINE = "v2_7_1"

# Every fix record this line applies: the shared ones, then its own.
FIXES: tuple[Patch, ...] = (*compose.shared_fixes(ADAPTERS), *flex.FIXES)


def backend_plan(backend: str | None, source: str | None = None) -> Plan:
    return compose.backend_plan(backend, ADAPTERS, source)


normalise_backend = compose.normalise_backend

__all__ = ["ADAPTERS", "FIXES", "LINE", "backend_plan", "normalise_backend"]
