"""Version module for torch 2.7.x-2.8.x: its adapters, its own flex, flex decoding and in-place fixes, and its LINE."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_7_1 import flex, flex_decoding_index, inplace
from npu_inductor_compat.v2_7_1.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS, own_fixes=(*flex.FIXES, *flex_decoding_index.FIXES, *inplace.FIXES))

__all__ = ["ADAPTERS", "LINE"]
