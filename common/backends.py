"""The NPU codegen backends (triton, mlir, dvm, ascendc) as data: what each needs installed and which layers it gets."""

# Selection: an explicit ``activate(backend=...)``, else the ``npu_backend`` Inductor option when set, else
# ``TORCHINDUCTOR_NPU_BACKEND``, else ``triton``. An unknown name is an error listing the valid ones (torch_npu's
# table silently fell back to Triton on a typo).
#
# One rule, however the backend was chosen (the default, the argument, the option or the variable): a missing provider
# package (the package a backend's codegen comes from: torch-mlir, torch_npu's mlir, dvm and ascendc packages) is an
# ImportError that names the package, the backend needing it and how to install it — checked before anything is
# patched (torch_npu's first ascendc loader imported a package that did not exist yet and crashed half-way). A missing
# NPU runtime (no device provider, i.e. no torch_npu; or no Triton for a Triton-family backend) is not an error: the
# device and backend layers are skipped, the torch-side records still apply, and the report says why.

from __future__ import annotations

import os

from npu_inductor_compat.common import device_layer, layers, providers
from npu_inductor_compat.common.adapters import LineAdapters
from npu_inductor_compat.common.backend_table import BACKEND_ENV, BACKENDS, DEFAULT_BACKEND, Backend, normalise
from npu_inductor_compat.common.option import current_value as current_option_value
from npu_inductor_compat.linespec import Plan


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
    chosen = config_layer + device_layer.device_layer(provider, adapters) + provider.records()
    for layer_name in backend.layers:
        chosen += layers.LAYERS[layer_name](provider, adapters)
    return Plan(backend=name, layers=chosen, known_ids=known)
