"""Version module for torch 2.15.x and newer: no DEVICE_TO_ATEN (device_to_aten() asks the op overrides), a device-
driven cpp_wrapper two-pass check. Declares one LINE."""

from __future__ import annotations

from npu_inductor_compat.common.composition import compose
from npu_inductor_compat.v2_15.adapters import ADAPTERS

LINE = compose.line_spec(__name__, ADAPTERS)

__all__ = ["ADAPTERS", "LINE"]
