"""The ``torch_npu-wheel`` device provider: torch_npu's released Inductor code, from its wheel, generating kernels
for the simulated NPU behind the deep stand-in; :func:`wheel_run` sets it all up and undoes it (torch_npu's own
patches of torch have no undo: one run per process)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.composition.providers import DeviceProvider
from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.simulated.wheel.wheel_events import EVENTS, Events
from npu_inductor_compat.tools.simulated.wheel.wheel_records import (
    BACKEND_MODULE,
    Checker,
    backend_records,
    provider_records,
)
from npu_inductor_compat.tools.simulated.wheel.wheel_release import PROVIDER_NAME, paired_release
from npu_inductor_compat.tools.simulated.wheel.wheel_targets import release_targets

__all__ = ["provider", "seed_first_candidate", "wheel_run"]

# torch_npu 2.7.1.post11's _inductor/ascend_npu_ir/ascend_npu_ir/config.py sets it (and allow_buffer_reuse=False) at
# import, which its triton backend reaches: Inductor then writes torch_compile_debug/ at every compile
DEBUG_TRACE = "trace.enabled"


def _registered_classes() -> tuple[type, type, type | None]:
    """The (scheduling, Python wrapper, C++ wrapper) torch_npu itself registered for "npu" when its backend loaded."""
    from torch._inductor.codegen import common

    registered = common.device_codegens.get("npu")
    if registered is None:
        raise RuntimeError(f"{PROVIDER_NAME}: {BACKEND_MODULE} registered no 'npu' codegen backend")
    return registered.scheduling, registered.wrapper_codegen, registered.cpp_wrapper_codegen


def provider(
    events: Events | None = None, release: str | None = None, checker: Checker | None = None
) -> DeviceProvider:
    """The ``torch_npu-wheel`` device provider (use it inside ``torch_npu_standin(depth="wheel")``): the simulated
    NPU plays the device; torch_npu's released code (``release``, default: the one paired with the installed torch,
    when its records are asked for) generates the code; ``events`` (default :data:`EVENTS`) receives its fallbacks
    and checks; ``checker`` makes the TTIR-check worker (the codegen process passes ttir_check.TtirCheckWorker)."""
    import torch

    from npu_inductor_compat.tools.simulated.npu import device_provider

    chosen = EVENTS if events is None else events
    raw_stream = Target.parse(torch_npu_names.qualname("raw-stream"))
    return DeviceProvider(
        name=PROVIDER_NAME,
        device_interface=device_provider.interface_for_provider,
        raw_stream_import=f"from {raw_stream.module} import {raw_stream.qualname} as {{name}}",
        summary="torch_npu's released Inductor code (pure Python, from its wheel) on the simulated NPU; codegen only",
        codegen_classes=_registered_classes,
        records=lambda: provider_records(chosen, release or paired_release(torch.__version__), checker),
    )


def seed_first_candidate(autotuner: Any) -> None:
    """Save ``autotuner``'s launch params as torch_npu's autotuner leaves them when it runs its first candidate.

    torch_npu 2.7.1.post11 and 2.9.0.post9 compile a kernel without its runtime-block arguments (e.g. ``X0BLOCK``:
    inductor_meta ``runtime_block_arg_names``) and pass them at launch: their autotuner builds a plan of candidates
    (``build_candidate_plan``: each config, less its runtime blocks, is a compiled variant), picks one
    (``_set_best_candidate``: its runtime blocks become ``best_runtime_blocks``) and saves the params of the
    variant's launcher, which carry those blocks (``runtime_blocks``) for the C++ wrapper to declare. Here candidate 0
    is picked, as torch_npu's autotuner picks it when the plan has one candidate (or deterministic algorithms are on),
    and the simulated launcher is its variant's. An autotuner without candidates (2.12.0.post3, stock Inductor's)
    saves its first config (kernel_params.save_first_config)."""
    from npu_inductor_compat.tools.simulated.codegen import kernel_params

    if not hasattr(autotuner, "_set_best_candidate"):
        kernel_params.save_first_config(autotuner)
        return
    build_candidate_plan = torch_npu_names.first_defined("autotuner-candidate-plan")
    heuristics = sys.modules[build_candidate_plan.__module__]
    plan = build_candidate_plan(autotuner.configs, autotuner.runtime_block_arg_names)
    candidate = plan["candidate_entries"][0]
    variant = heuristics.config_from_dict(plan["variants"][candidate["variant_id"]]["config"])
    launcher = kernel_params.simulated_launcher(autotuner, variant)
    autotuner.candidate_plan = plan
    autotuner._set_best_candidate(candidate, launcher)
    autotuner.save_gpu_kernel(0, launcher)


def _restore_npu_entries(mapping: dict[str, Any], before: dict[str, Any]) -> None:
    """Put back the "npu" and "npu:<index>" entries of ``mapping`` as they were (others, e.g. those torch's own
    lazy registration adds meanwhile, stay)."""
    for key in [key for key in mapping if key == "npu" or key.startswith("npu:")]:
        if key in before:
            mapping[key] = before[key]
        else:
            del mapping[key]


@contextlib.contextmanager
def wheel_run(
    version: str | None = None, checker: Checker | None = None
) -> Iterator[tuple[Any, DeviceProvider, Events]]:
    """The deep stand-in, torch_npu's backend loaded (:func:`backend_records`) and this provider selected; yields
    ``(StandInUse, provider, events)``; ``checker``: as for :func:`provider` (None in a kernel worker, which is the
    checker). Activate (and deactivate) inside the block. On exit the provider override,
    the registries torch_npu's loading wrote, and the stand-in are restored."""
    import torch._inductor.config as inductor_config
    from torch._dynamo import device_interface

    from npu_inductor_compat.common.composition import providers
    from npu_inductor_compat.patching import Journal
    from npu_inductor_compat.tools.simulated.codegen import kernel_params
    from npu_inductor_compat.tools.simulated.npu import device
    from npu_inductor_compat.tools.simulated.wheel.standin import torch_npu_standin

    device.setup()
    events = Events()
    with torch_npu_standin(depth="wheel", wheel_version=version) as use, contextlib.ExitStack() as stack:
        release = use.wheel.tree.version
        chosen = provider(events, release, checker)
        journal = Journal()
        before = inductor_config.get_config_copy()
        stack.callback(inductor_config.load_config, before)  # torch_npu's config edits end with the run
        # torch_npu 2.9+ registers its dynamo interface for "npu" and "npu:0" ... "npu:31" while loading (utils/
        # _dynamo.py _dynamo_register_interface_for_device): the journal restores "npu", this the others
        interfaces = dict(device_interface.device_interfaces)
        stack.callback(_restore_npu_entries, device_interface.device_interfaces, interfaces)
        journal.apply(backend_records(release))
        stack.callback(journal.undo)
        after = inductor_config.get_config_copy()
        events.config_changes = {
            key: {"before": repr(before.get(key)), "after": repr(value)}
            for key, value in after.items()
            if before.get(key) != value
        }
        if after.get(DEBUG_TRACE):
            # codegen keeps what it generates in --out; Inductor's debug trace would write torch_compile_debug/
            # into the working directory at every compile (it changes no generated code)
            stack.enter_context(inductor_config.patch({DEBUG_TRACE: False}))
            change = events.config_changes.setdefault(
                DEBUG_TRACE, {"before": repr(before.get(DEBUG_TRACE)), "after": repr(after.get(DEBUG_TRACE))}
            )
            change["codegen"] = "False: the debug trace writes into the working directory"
        previous = providers.set_provider(chosen)
        stack.callback(providers.set_provider, previous)
        # torch_npu's autotuner saves a kernel's launch params from what triton-ascend's compiler recorded
        recorded = dict(release_targets(release).compiler_fields)
        stack.enter_context(kernel_params.triton_ascend_compiled(seed_first_candidate, recorded))
        yield use, chosen, events
