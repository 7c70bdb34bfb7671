"""How a version module assembles what it applies: common's shared records built with the line's adapters.

A version module is the composition root: its ``FIXES`` are ``shared_fixes(ADAPTERS)`` plus its own records, and
its ``backend_plan`` is ``backend_plan`` here with its adapters. A new torch line therefore gets every shared
record by construction (tests/test_lines.py adds a synthetic line and checks it).
"""

from __future__ import annotations

from npu_inductor_compat.activation import Plan
from npu_inductor_compat.common import backends, flex, launch_fixes, torch_npu_fixes
from npu_inductor_compat.common.adapters import LineAdapters
from npu_inductor_compat.patching import Patch


def shared_fixes(adapters: LineAdapters) -> tuple[Patch, ...]:
    """The fix records every line lists (a record whose upstream fix exists on a line reports "not needed")."""
    return (
        flex.DECODING_SPLIT_FROM_DEVICE,
        launch_fixes.AUTOTUNER_KERNEL_METADATA,
        launch_fixes.cpp_wrapper_workspace_locks(adapters),
        *torch_npu_fixes.FIXES,
    )


def backend_plan(explicit: str | None, adapters: LineAdapters, source: str | None = None) -> Plan:
    """The device, backend and config layers for ``explicit`` (or the configured backend) on this line."""
    return backends.backend_plan(explicit, adapters, source)


def normalise_backend(name: object, source: str) -> str:
    return backends.normalise(name, source)
