"""Shared by every torch line: the NPU backend table and loaders, the patch layers, the device providers.

Nothing here imports a version module; importing this package imports no torch module.
"""

from __future__ import annotations

from npu_inductor_compat.patching import Patch

# Fix records shared by all torch lines (added by the workspace/lock and autotuner issues).
FIXES: tuple[Patch, ...] = ()
