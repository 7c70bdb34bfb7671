"""The NPU codegen backends (triton, mlir, dvm, ascendc) as data: what each needs installed, which layers it gets,
and the one reader of a backend name. A leaf: the option validates with it, backends.py selects and plans from it."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

from npu_inductor_compat.common import torch_npu_names

BACKEND_ENV = "TORCHINDUCTOR_NPU_BACKEND"
DEFAULT_BACKEND = "triton"
ALIASES = {"default": "triton"}


@dataclass(frozen=True)
class Requirement:
    """An importable package a backend needs, and how a user gets it."""

    module: str
    install: str

    def problem(self) -> str | None:
        """None when importable as far as can be told without importing it; else what is wrong."""
        if self.module in sys.modules:
            return None
        try:
            found = importlib.util.find_spec(self.module)
        except ModuleNotFoundError:
            found = None
        except Exception as err:  # a parent package is installed but fails to import (torch_npu without CANN)
            return f"the package {self.module!r}, which cannot be imported ({type(err).__name__}: {err})"
        if found is None:
            return f"the package {self.module!r}, which is not installed ({self.install})"
        return None


@dataclass(frozen=True)
class Backend:
    name: str
    summary: str
    # The packages this backend's codegen comes from: one that is missing is an ImportError.
    providers: tuple[Requirement, ...]
    # Layer names, applied in this order after the device layer (see common.composition.layers.LAYERS).
    layers: tuple[str, ...]
    # The NPU runtime its layers run on besides the device provider (Triton for the Triton family): without it,
    # as without a device provider, the device and backend layers are skipped with the reason in the report.
    runtime: tuple[Requirement, ...] = ()


TRITON_REQUIREMENT = Requirement(
    "triton", "pip install triton-ascend  (on an NPU host; plain triton serves codegen only)"
)

BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "triton",
            "Triton kernels through triton-ascend (the default)",
            (),  # this package's own codegen, or the device provider's
            ("triton-family", "triton-registration"),
            runtime=(TRITON_REQUIREMENT,),
        ),
        Backend(
            "mlir",
            "Triton-family codegen lowered through torch_npu's MLIR path",
            (
                Requirement("torch_mlir", "pip install torch-mlir"),
                Requirement(torch_npu_names.module_of("mlir-package"), "pip install torch_npu"),
            ),
            ("triton-family", "mlir-loader"),
            runtime=(TRITON_REQUIREMENT,),
        ),
        Backend(
            "dvm",
            "torch_npu's DVM fused-kernel backend (Triton-family patches)",
            (Requirement(torch_npu_names.module_of("dvm-package"), "pip install 'torch_npu>=2.7.1'"),),
            ("triton-family", "dvm-loader"),
            runtime=(TRITON_REQUIREMENT,),
        ),
        Backend(
            "ascendc",
            "AscendC kernels with aclgraph capture/replay (no Triton)",
            (
                Requirement(
                    torch_npu_names.module_of("ascendc-package"),
                    "pip install 'torch_npu>=2.9.0' (2.7.1 ships no ascendc loader)",
                ),
            ),
            ("ascendc", "ascendc-loader"),
        ),
    )
}


def valid_names() -> list[str]:
    return sorted([*BACKENDS, *ALIASES])


def normalise(name: object, source: str) -> str:
    """The backend a user-given name means; ValueError naming the source and the valid names otherwise."""
    if not isinstance(name, str):
        raise ValueError(f"{source}: NPU backend must be a string, got {name!r}; valid: {', '.join(valid_names())}")
    # str's own methods: a str subclass may override strip() or lower() (and return anything); the key is a plain str
    key = str.lower(str.strip(name))
    key = ALIASES.get(key, key)
    if key not in BACKENDS:
        raise ValueError(f"{source}: unknown NPU backend {name!r}; valid: {', '.join(valid_names())}")
    return key


@dataclass(frozen=True)
class BackendChoice:
    """A backend, normalised once where it entered (an argument, the option, the variable), and where that was."""

    name: str
    source: str


def choose(name: object, source: str) -> BackendChoice:
    """``name`` as it entered from ``source``, normalised (ValueError naming the source and the valid names)."""
    return BackendChoice(normalise(name, source), source)
