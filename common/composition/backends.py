"""Which backend applies (the argument, the option, the variable or the default) and what it needs: the plan of
layers a line's adapters make for it; the backends themselves are data in backend_table.py."""

from __future__ import annotations

import os

from npu_inductor_compat.common.composition import layers, providers
from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.backend_table import (
    BACKEND_ENV,
    BACKENDS,
    DEFAULT_BACKEND,
    Backend,
    BackendChoice,
    choose,
)
from npu_inductor_compat.common.composition.option import current_value as current_option_value
from npu_inductor_compat.common.device import device_layer
from npu_inductor_compat.linespec import Plan


def requested_backend(explicit: BackendChoice | None) -> BackendChoice:
    """The backend in the documented order: ``explicit`` (normalised where it entered: the argument, the per-compile
    option), else the option's value, else the variable, else the default; each read here is normalised here.

    That is: an explicit ``activate(backend=...)``, else the ``npu_backend`` Inductor option when set, else
    ``TORCHINDUCTOR_NPU_BACKEND``, else ``triton``. An unknown name is an error listing the valid ones (torch_npu's
    table silently fell back to Triton on a typo).
    """
    if explicit is not None:
        return explicit
    option = current_option_value()
    if option is not None:
        return BackendChoice(choose(option, "torch._inductor.config.npu_backend").name, "the npu_backend option")
    env = os.environ.get(BACKEND_ENV)
    if env:
        return choose(env, BACKEND_ENV)
    return BackendChoice(DEFAULT_BACKEND, "default")


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


def backend_plan(explicit: BackendChoice | None, adapters: LineAdapters) -> Plan:
    """The device layer plus the backend's layers, or the reason they cannot be applied.

    One rule, however the backend was chosen (the default, the argument, the option or the variable): a missing
    provider package (the package a backend's codegen comes from: torch-mlir, torch_npu's mlir, dvm and ascendc
    packages) is an ImportError that names the package, the backend needing it and how to install it — checked before
    anything is patched (torch_npu's first ascendc loader imported a package that did not exist yet and crashed
    half-way). A missing NPU runtime (no device provider, i.e. no torch_npu; or no Triton for a Triton-family backend)
    is not an error: the device and backend layers are skipped, the torch-side records still apply, and the plan (so
    the report) says what it skipped and why.
    """
    choice = requested_backend(explicit)
    name, source = choice.name, choice.source
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
    chosen = config_layer + device_layer.device_layer(provider, adapters) + provider.records()
    for layer_name in backend.layers:
        chosen += layers.LAYERS[layer_name](provider, adapters)
    return Plan(backend=name, layers=chosen, known_ids=known)
