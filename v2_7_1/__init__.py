"""Version module for torch 2.7.x-2.8.x: its adapters, its own flex and in-place fixes, and its LINE."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_7_1 import flex, inplace
from npu_inductor_compat.v2_7_1.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS, own_fixes=(*flex.FIXES, *inplace.FIXES))

__all__ = ["ADAPTERS", "LINE"]
