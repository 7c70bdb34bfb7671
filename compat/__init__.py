"""npu-inductor-compat: torch.compile's Inductor glue for Ascend NPUs, dispatched by the installed torch release."""

# Importing this package applies nothing, sets no environment variable and imports no ``torch._inductor`` module
# (torch's autoload entry point imports the package on every ``import torch``).

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "TorchVersionOverrideWarning",
    "UnsupportedTorchVersion",
    "UntestedTorchVersionWarning",
    "__version__",
    "activate",
    "deactivate",
    "status",
    "torch_line",
]

# public name -> the module defining it, imported on first use: the package imports nothing at all until a name
# below is used. ``activate()`` chooses the version module for the installed torch and applies, through one undo
# journal, the NPU device layer, the selected backend's layers and the fixes that torch release needs;
# ``deactivate()`` undoes it.
_LAZY = {
    "activate": "npu_inductor_compat.activation",
    "deactivate": "npu_inductor_compat.activation",
    "status": "npu_inductor_compat.activation",
    "torch_line": "npu_inductor_compat.dispatch",
    "UnsupportedTorchVersion": "npu_inductor_compat.dispatch",
    "UntestedTorchVersionWarning": "npu_inductor_compat.dispatch",
    "TorchVersionOverrideWarning": "npu_inductor_compat.dispatch",
}

if TYPE_CHECKING:
    from npu_inductor_compat.activation import activate, deactivate, status
    from npu_inductor_compat.dispatch import (
        TorchVersionOverrideWarning,
        UnsupportedTorchVersion,
        UntestedTorchVersionWarning,
        torch_line,
    )


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'npu_inductor_compat' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
