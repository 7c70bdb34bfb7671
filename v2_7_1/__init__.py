"""Version module for torch 2.7.x-2.8.x: what differs on this line (the flex backward grid, cpp_wrapper hooks)."""

from __future__ import annotations

from npu_inductor_compat.common.backends import backend_plan
from npu_inductor_compat.common.backends import normalise as normalise_backend
from npu_inductor_compat.common.simulated.cli import codegen_main
from npu_inductor_compat.patching import Patch
from npu_inductor_compat.v2_7_1 import flex

LINE = "v2_7_1"

# This line's own fix records.
FIXES: tuple[Patch, ...] = flex.FIXES

__all__ = ["FIXES", "LINE", "backend_plan", "codegen_main", "normalise_backend"]
