"""Version module for torch 2.9.x-2.11.x: flex in kernel/flex/ with symbolic grids, unnamed option entries, built-in
op overrides loaded before registering npu, a precompiled cpp_wrapper header. Declares one LINE."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_9.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS)

__all__ = ["ADAPTERS", "LINE"]
