"""Version module for torch 2.7.x-2.8.x: flex attention in kernel/flex_attention.py with a plain backward grid (its
own fixes in flex.py), the in-place reuse check fix (inplace.py), unnamed option entries, built-in op overrides
loaded before registering npu. One LINE."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_7_1 import flex, inplace
from npu_inductor_compat.v2_7_1.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS, own_fixes=(*flex.FIXES, *inplace.FIXES))

__all__ = ["ADAPTERS", "LINE"]
