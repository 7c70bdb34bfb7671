"""The NPU codegen backends (triton, mlir, dvm, ascendc) as data: what each needs installed and which layers it gets.

Selection: an explicit ``activate(backend=...)``, else the ``npu_backend`` Inductor option when set, else
``TORCHINDUCTOR_NPU_BACKEND``, else ``triton``. An unknown name is an error listing the valid ones (torch_npu's
table silently fell back to Triton on a typo). A missing provider package is an ImportError that names the package,
the backend needing it and how to install it — checked before anything is patched (torch_npu's first ascendc loader
imported a package that did not exist yet and crashed half-way).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass

from npu_inductor_compat.activation import Plan
from npu_inductor_compat.common import layers, providers, torch_npu_names
from npu_inductor_compat.common.adapters import LineAdapters
from npu_inductor_compat.common.option import current_value as current_option_value

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
    requires: tuple[Requirement, ...]
    # Layer names, applied in this order after the device layer (see common.layers.LAYERS).
    layers: tuple[str, ...]


TRITON_REQUIREMENT = Requirement(
    "triton", "pip install triton-ascend  (on an NPU host; plain triton serves codegen only)"
)

BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "triton",
            "Triton kernels through triton-ascend (the default)",
            (TRITON_REQUIREMENT,),
            ("triton-family", "triton-registration"),
        ),
        Backend(
            "mlir",
            "Triton-family codegen lowered through torch_npu's MLIR path",
            (
                TRITON_REQUIREMENT,
                Requirement("torch_mlir", "pip install torch-mlir"),
                Requirement(torch_npu_names.module_of("mlir-package"), "pip install torch_npu"),
            ),
            ("triton-family", "mlir-loader"),
        ),
        Backend(
            "dvm",
            "torch_npu's DVM fused-kernel backend (Triton-family patches)",
            (
                TRITON_REQUIREMENT,
                Requirement(torch_npu_names.module_of("dvm-package"), "pip install 'torch_npu>=2.7.1'"),
            ),
            ("triton-family", "dvm-loader"),
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
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in BACKENDS:
        raise ValueError(f"{source}: unknown NPU backend {name!r}; valid: {', '.join(valid_names())}")
    return key


def requested_backend(explicit: str | None, source: str | None = None) -> tuple[str, str]:
    """(backend, where the choice came from), in the documented order. ``source`` names where an explicit choice
    came from when it was not ``activate(backend=...)`` (e.g. the per-compile option)."""
    if explicit is not None:
        where = source or "activate(backend=...)"
        return normalise(explicit, where), where
    option = current_option_value()
    if option is not None:
        return normalise(option, "torch._inductor.config.npu_backend"), "the npu_backend option"
    env = os.environ.get(BACKEND_ENV)
    if env:
        return normalise(env, BACKEND_ENV), BACKEND_ENV
    return DEFAULT_BACKEND, "default"


def requirement_problems(backend: Backend) -> list[str]:
    return [problem for requirement in backend.requires if (problem := requirement.problem()) is not None]


def backend_plan(explicit: str | None, adapters: LineAdapters, source: str | None = None) -> Plan:
    """The device layer plus the backend's layers, or the reason they cannot be applied.

    With no backend asked for explicitly, a machine without an NPU device provider still gets every torch-side fix
    and the plan says what it skipped; asking for a backend whose provider is missing is an ImportError.
    """
    name, source = requested_backend(explicit, source)
    backend = BACKENDS[name]
    provider = providers.active_provider()
    problems: list[str] = []
    if provider is None:
        problems.append(
            "no NPU device provider: torch_npu is not installed (pip install torch_npu; it needs the CANN toolkit) "
            "and no simulated NPU is set up"
        )
    problems += [f"backend {name!r} needs {problem}" for problem in requirement_problems(backend)]
    config_layer = layers.config_layer(adapters)
    known = layers.all_layer_ids(adapters)
    if problems:
        if source != "default":
            raise ImportError(f"cannot activate NPU backend {name!r} (chosen by {source}): " + "; ".join(problems))
        return Plan(
            backend=None,
            layers=config_layer,
            skipped=tuple(("device and backend layers", problem) for problem in problems),
            known_ids=known,
        )
    assert provider is not None
    chosen = config_layer + layers.device_layer(provider, adapters) + provider.records()
    for layer_name in backend.layers:
        chosen += layers.LAYERS[layer_name](provider, adapters)
    return Plan(backend=name, layers=chosen, known_ids=known)
