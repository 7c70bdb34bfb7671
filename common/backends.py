"""The NPU codegen backends (triton, mlir, dvm, ascendc) as data: what each needs installed and which layers it gets.

Selection: an explicit ``activate(backend=...)``, else the ``npu_backend`` Inductor option when set, else
``TORCHINDUCTOR_NPU_BACKEND``, else ``triton``. An unknown name is an error listing the valid ones (torch_npu's
table silently fell back to Triton on a typo).

One rule, however the backend was chosen (the default, the argument, the option or the variable): a missing provider
package (the package a backend's codegen comes from: torch-mlir, torch_npu's mlir, dvm and ascendc packages) is an
ImportError that names the package, the backend needing it and how to install it — checked before anything is
patched (torch_npu's first ascendc loader imported a package that did not exist yet and crashed half-way). A missing
NPU runtime (no device provider, i.e. no torch_npu; or no Triton for a Triton-family backend) is not an error: the
device and backend layers are skipped, the torch-side records still apply, and the report says why.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass

from npu_inductor_compat.common import layers, providers, torch_npu_names
from npu_inductor_compat.common.adapters import LineAdapters
from npu_inductor_compat.common.option import current_value as current_option_value
from npu_inductor_compat.linespec import Plan

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
    # Layer names, applied in this order after the device layer (see common.layers.LAYERS).
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
    """What is wrong with the backend's provider packages (each one an ImportError, however it was chosen)."""
    return [problem for requirement in backend.providers if (problem := requirement.problem()) is not None]


def runtime_problems(backend: Backend, provider: providers.DeviceProvider | None) -> list[str]:
    """What is missing of the NPU runtime the backend's layers run on (each one skips them, however it was chosen)."""
    problems: list[str] = []
    if provider is None:
        problems.append(
            "no NPU device provider: torch_npu is not installed (pip install torch_npu; it needs the CANN toolkit) "
            "and no simulated NPU is set up"
        )
    problems += [
        f"backend {backend.name!r} needs {problem}"
        for requirement in backend.runtime
        if (problem := requirement.problem()) is not None
    ]
    return problems


def backend_plan(explicit: str | None, adapters: LineAdapters, source: str | None = None) -> Plan:
    """The device layer plus the backend's layers, or the reason they cannot be applied.

    The same rule whatever chose the backend: a missing provider package is an ImportError (nothing is patched); a
    missing NPU runtime (device provider, Triton) leaves only the torch-side records, and the plan says what it
    skipped and why.
    """
    name, source = requested_backend(explicit, source)
    backend = BACKENDS[name]
    missing = requirement_problems(backend)
    if missing:
        raise ImportError(
            f"cannot activate NPU backend {name!r} (chosen by {source}): "
            + "; ".join(f"backend {name!r} needs {problem}" for problem in missing)
        )
    provider = providers.active_provider()
    config_layer = layers.config_layer(adapters)
    known = layers.all_layer_ids(adapters)
    unavailable = runtime_problems(backend, provider)
    if unavailable:
        return Plan(
            backend=None,
            layers=config_layer,
            skipped=tuple(("device and backend layers", problem) for problem in unavailable),
            known_ids=known,
        )
    assert provider is not None
    chosen = config_layer + layers.device_layer(provider, adapters) + provider.records()
    for layer_name in backend.layers:
        chosen += layers.LAYERS[layer_name](provider, adapters)
    return Plan(backend=name, layers=chosen, known_ids=known)
