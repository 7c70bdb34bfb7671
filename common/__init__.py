"""Shared by every torch line: the NPU backend table and loaders, the patch layers, the device providers.

Nothing here imports a version module; importing this package imports no torch module.
"""

from __future__ import annotations

from npu_inductor_compat.common import flex, launch_fixes
from npu_inductor_compat.patching import Patch

# Fix records shared by several torch lines.
FIXES: tuple[Patch, ...] = (
    flex.DECODING_SPLIT_FROM_DEVICE,
    launch_fixes.AUTOTUNER_KERNEL_METADATA,
    launch_fixes.CPP_WRAPPER_WORKSPACE_LOCKS,
)
