"""Version module for torch 2.9.x-2.11.x: what differs on this line from the shared code in common."""

from __future__ import annotations

from npu_inductor_compat.common.backends import backend_plan
from npu_inductor_compat.common.backends import normalise as normalise_backend
from npu_inductor_compat.common.simulated.cli import codegen_main
from npu_inductor_compat.patching import Patch

LINE = "v2_9"

# This line's own fix records.
FIXES: tuple[Patch, ...] = ()

__all__ = ["FIXES", "LINE", "backend_plan", "codegen_main", "normalise_backend"]
