"""Version module for torch 2.9.x-2.11.x: its adapters and its LINE (what differs: compat/lines.py)."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_9.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS)

__all__ = ["ADAPTERS", "LINE"]
