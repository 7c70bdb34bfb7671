"""`codegen --cpp-wrapper --execute`: a graph's C++ wrapper built, linked against the emulated NPU runtime, loaded and
called; each kernel run by the emulated device from its packed arguments; outputs and inputs compared with eager."""

# The wrapper is the one Inductor generated, compiled with this package's build options for device "npu"
# ($NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME: the emulated runtime's stub libtorch_npu and ACL); each launch runs when
# made (BLOCKING_ENV). Only the config the autotuner saved for the wrapper runs: the C++ wrapper launches that one
# binary.

from __future__ import annotations

import contextlib
import os
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from npu_inductor_compat.tools.simulated.execution.call_site_constants import call_site_values
from npu_inductor_compat.tools.simulated.execution.cpp_device import SAVED, LoadedRuntime, Ran, device_kernel
from npu_inductor_compat.tools.simulated.execution.execute import (
    Execution,
    Plan,
    inputs_copied,
    judged_values,
    laid_out,
    not_run,
)
from npu_inductor_compat.tools.simulated.execution.execute_launch import ConfigRun, Launch

# Launches as torch_npu makes them with ASCEND_LAUNCH_BLOCKING=1 (OpCommand.cpp RunOpApiV2: the queue off, the stream
# synchronised after each op): every kernel runs at its launch, in program order with the ops the simulated NPU runs
# on the host at once (a fallback the wrapper calls through the dispatcher reads what the kernel before it wrote).
BLOCKING_ENV = "ASCEND_LAUNCH_BLOCKING"
NOT_COMPARED = (
    "a C++ wrapper's buffers are not compared kernel by kernel (its kernels write device memory the wrapper "
    "allocates): the outputs differ, no kernel raised or was refused"
)


@contextlib.contextmanager
def emulated_runtime_for(wanted: bool, say: Callable[[str], None]) -> Iterator[LoadedRuntime | str | None]:
    """Inside, with ``wanted``: the emulated runtime loaded and the build options pointed at it (the runtime, or why
    there is none: each C++ graph is then not run, saying so); None without ``wanted``. Restored on exit. Entered
    before torch_npu's Inductor loads: its C++ builder reads $ASCEND_HOME_PATH at import."""
    if not wanted:
        yield None
        return
    import torch

    from npu_inductor_compat.tools.simulated.codegen import headers
    from npu_inductor_compat.tools.simulated.execution import emulated_runtime

    try:
        (source,) = headers.torch_npu_headers(torch.__version__)
        npu = emulated_runtime.cached(source.include, capture=False, note=say)
    except (headers.HeaderCheckUnavailable, emulated_runtime.RuntimeUnavailable, OSError) as err:
        yield f"no emulated NPU runtime to run it against: {err}"
        return
    kept = {name: os.environ.get(name) for name in (*npu.env(), BLOCKING_ENV)}
    os.environ.update({**npu.env(), BLOCKING_ENV: "1"})
    try:
        try:
            runtime: LoadedRuntime | str = LoadedRuntime(str(npu.libascendcl), str(npu.libtorch_npu))
        except OSError as err:  # a library that does not load (a damaged entry is rebuilt on the next run)
            runtime = f"the emulated NPU runtime in {npu.torch_npu_home.parent} does not load: {err}"
        yield runtime
    finally:
        for name, value in kept.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def graph_kernels(source: str) -> dict[str, Any]:
    """The kernels saved since the last graph took its own: this graph's (Inductor has just generated it, ``source``:
    its wrapper, whose calls give the values of call-site constexprs the binary has compiled in)."""
    kernels = {}
    for name, (params, autotuner) in SAVED.take().items():
        if autotuner is not None:
            kernel = device_kernel(params, autotuner)
            signature = params["triton_meta"].get("signature", {})
            unknown = [arg for arg, kind in signature.items() if kind == "constexpr" and arg not in kernel.compiled_in]
            kernel.compiled_in.update(call_site_values(source, name, unknown))
            kernels[name] = kernel
    return kernels


def execute_cpp(
    plan: Plan,
    inputs: list[Any],
    run_eager: Callable[[list[Any]], Any],
    *,
    runtime: LoadedRuntime,
    kernels: dict[str, Any],
) -> tuple[Any, Execution]:
    """The eager outputs (what the script goes on with), and the C++ wrapper's verdict."""
    import torch

    copies = inputs_copied(inputs)
    if isinstance(copies, str):
        return run_eager(inputs), not_run(copies)
    compiled_inputs, before = copies
    outputs = run_eager(inputs)
    started = time.perf_counter()
    runtime.reset()
    runtime.emulated.kernels.clear()
    runtime.emulated.kernels.update(kernels)
    try:
        with torch.no_grad():
            from torch._inductor.codecache import PyCodeCache

            module = PyCodeCache.load(plan.source)  # builds, links and loads the wrapper's .so
            compiled_inputs = laid_out(compiled_inputs, plan.layouts)
            compiled = module.call(list(compiled_inputs))
            runtime.synchronize()  # nothing the call queued is left unrun
    except Exception as err:
        with contextlib.suppress(RuntimeError):  # what it queued before it failed runs now, as this graph's
            runtime.synchronize()
        execution = Execution(
            "error",
            error={"type": type(err).__name__, "message": str(err)[:2000], "traceback": traceback.format_exc()},
            launches=_launches(runtime.emulated.ran, plan),
        )
        return outputs, _finished(execution, runtime, started)
    execution = Execution("match", launches=_launches(runtime.emulated.ran, plan))
    execution.values = judged_values(plan, outputs, compiled, inputs, compiled_inputs, before)
    if any(value["status"] == "mismatch" for value in execution.values):
        execution.status = "mismatch"
    return outputs, _finished(execution, runtime, started)


def _launches(ran: list[Ran], plan: Plan) -> list[Launch]:
    """Each launch the device ran, as codegen --execute reports launches (one config: the saved one)."""
    launches = []
    for run in ran:
        status, detail = ("match", None) if run.error is None else ("error", {"type": "device", "message": run.error})
        config = ConfigRun(f"{run.blocks} blocks", status, "nothing", detail=detail)  # buffers not compared
        launch = Launch(run.kernel, [], [config], seconds=run.seconds)
        launches.append(launch)
        if plan.on_launch is not None:
            plan.on_launch(launch)
    return launches


def _finished(execution: Execution, runtime: LoadedRuntime, started: float) -> Execution:
    """The device's findings folded in: a refused or failed launch, or any hazard the emulated ACL saw, is an
    error naming the first; a mismatch with neither is not localised to a kernel."""
    refused = next((launch for launch in execution.launches if launch.status == "error"), None)
    hazards = [text for text in runtime.hazards() if refused is None or refused.kernel not in text]
    if refused is not None:
        execution.status = "error"
        execution.first_wrong = {"kernel": refused.kernel, **refused.configs[0].summary()}
    elif hazards:
        execution.status = "error"
        execution.error = execution.error or {"type": "hazard", "message": hazards[0], "traceback": ""}
    elif execution.status == "mismatch":
        execution.localised = NOT_COMPARED
    execution.seconds = time.perf_counter() - started
    return execution
