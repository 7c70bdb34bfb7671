"""npu-inductor-compat: torch.compile's Inductor glue for Ascend NPUs, dispatched by the installed torch release.

Importing this package applies nothing, sets no environment variable and imports no ``torch._inductor`` module.
``activate()`` chooses the version module for the installed torch and applies, through one undo journal, the NPU
device layer, the selected backend's layers and the fixes that torch release needs; ``deactivate()`` undoes it.
"""

from __future__ import annotations

from npu_inductor_compat.activation import activate, deactivate, status
from npu_inductor_compat.dispatch import UnsupportedTorchVersion, UntestedTorchVersionWarning, torch_line

__version__ = "0.1.0"

__all__ = [
    "UnsupportedTorchVersion",
    "UntestedTorchVersionWarning",
    "__version__",
    "activate",
    "deactivate",
    "status",
    "torch_line",
]
