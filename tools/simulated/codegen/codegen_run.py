"""One `codegen` run, in the child: the simulated NPU and the provider set up, this package activated, the script
run with every graph captured, --out written, and the closing lines printed."""

from __future__ import annotations

import contextlib
import importlib
import runpy
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.codegen import codegen_summary
from npu_inductor_compat.tools.simulated.codegen.codegen_args import Invocation
from npu_inductor_compat.tools.simulated.codegen.codegen_child import end_a_forked_copy
from npu_inductor_compat.tools.simulated.codegen.codegen_env import (
    codegen_settings,
    cpp_extension_quiet,
    cuda_notes_dropped,
    script_argv,
)
from npu_inductor_compat.tools.simulated.codegen.codegen_report import Outcome, Progress, verdict, without_fix_notes

SETUP_FAILED = 3  # the simulated NPU or the provider could not be set up (a cache, a build): the script never ran


def run(inv: Invocation) -> int:
    """The run's exit code; everything it set up is undone before the closing lines."""
    from npu_inductor_compat.activation import deactivate
    from npu_inductor_compat.tools.simulated.npu import device

    progress = Progress(inv.args.quiet)
    try:
        with progress.muted(), cpp_extension_quiet():
            device.setup()
    except RuntimeError as err:  # e.g. no setuptools for torch's cpp_extension: say so, no traceback
        print(f"npu_inductor_compat codegen: cannot set the simulated NPU up: {err}", file=sys.stderr)
        return SETUP_FAILED
    except (OSError, ValueError) as err:  # the extension cache: a file where a folder belongs, read-only, ...
        from npu_inductor_compat.tools.simulated.npu.extension_build import CACHE_ENV, cache_root

        print(
            f"npu_inductor_compat codegen: cannot set the simulated NPU up: its extension cache {cache_root()} is "
            f"unusable ({type(err).__name__}: {err}); delete it, or set {CACHE_ENV} to another folder. The script did "
            "not run",
            file=sys.stderr,
        )
        return SETUP_FAILED
    previous_soc = device.use_soc(inv.soc)  # before torch_npu's code loads: it reads the SoC version at import
    run_stack = ExitStack()
    try:
        outcome = _generate(inv, run_stack, progress)
    finally:
        deactivate()
        run_stack.close()  # the provider choice, and for torch_npu-wheel the deep stand-in and its backend
        device.use_soc(previous_soc)
    if isinstance(outcome, int):
        return outcome
    return verdict(inv.args, outcome, inv.output.root, progress)


def _provider(inv: Invocation, run_stack: ExitStack, progress: Progress) -> tuple[Any, Any] | None:
    """The chosen provider put in place until ``run_stack`` closes: (the torch_npu stand-in's context, torch_npu's
    events or None); None when the provider failed (said on stderr)."""
    from npu_inductor_compat.common.composition import providers
    from npu_inductor_compat.tools.simulated.npu import device
    from npu_inductor_compat.tools.simulated.wheel.standin import torch_npu_standin

    if inv.args.provider != "torch_npu-wheel":
        run_stack.callback(providers.set_provider, providers.set_provider(device.PROVIDER))
        return torch_npu_standin(), None
    from npu_inductor_compat.patching import ActivationFailed
    from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker
    from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel, wheel_release

    try:
        with progress.muted(), cpp_extension_quiet():
            # torch_npu's cpp_builder imports torch's cpp_extension, which warns at import that this machine has no
            # CUDA runtime; the device set-up imported it quietly only if it had to build its extension
            with contextlib.suppress(ModuleNotFoundError):  # no setuptools: torch_npu's import says so itself
                importlib.import_module("torch.utils.cpp_extension")
            deep, _, events = run_stack.enter_context(torch_npu_wheel.wheel_run(checker=TtirCheckWorker))
    except (wheel_release.WheelUnavailable, ActivationFailed) as err:
        default = inv.args.provider_choice.requested is None
        hint = " (the default on this torch; --provider stock runs stock Inductor instead)" if default else ""
        print(f"npu_inductor_compat codegen: the torch_npu-wheel provider failed: {err}{hint}", file=sys.stderr)
        return None
    return contextlib.nullcontext(deep), events  # the deep stand-in is already in place


def _generate(inv: Invocation, run_stack: ExitStack, progress: Progress) -> Outcome | int:
    """Activate, run the script, write --out; the exit code when the provider (SETUP_FAILED) or the activation
    (1) failed (said)."""
    from npu_inductor_compat.activation import activate, status
    from npu_inductor_compat.tools.simulated.execution.execute_cpp import emulated_runtime_for
    from npu_inductor_compat.tools.simulated.npu import device

    # --cpp-wrapper --execute: before the provider, whose torch_npu C++ builder reads $ASCEND_HOME_PATH at import
    cpp_runtime = run_stack.enter_context(emulated_runtime_for(inv.args.execute and inv.args.cpp_wrapper, progress.say))
    provided = _provider(inv, run_stack, progress)
    if provided is None:
        return SETUP_FAILED  # the script never ran
    standin_context, events = provided
    args = inv.args
    try:
        report = activate(args.backend, disable=args.without_fix)
    except (ImportError, ValueError, RuntimeError) as err:
        print(f"npu_inductor_compat codegen: activation failed, nothing applied: {err}", file=sys.stderr)
        return 1
    import torch

    for note in without_fix_notes(args.without_fix, report, torch.__version__):
        print(note, file=sys.stderr)
    progress.say(
        f"running {inv.script} on the simulated NPU ({inv.soc}; torch {torch.__version__}, {report['line']}, "
        f"backend {status()['backend']}, provider {args.provider})"
    )
    torch._dynamo.reset()
    device.cpu_fallback_counts(reset=True)  # count what the script's run sends to the CPU, nothing before
    with _script_environment(inv, standin_context, progress, cpp_runtime) as (standin, capture):
        script_error, imported_torch_npu = _run_script(inv.script)
        end_a_forked_copy(inv.output)
    torch._dynamo.reset()
    cpu_fallback = device.cpu_fallback_counts(reset=True)
    graphs = codegen_summary.write_graphs(inv.output, capture.graphs, events)
    if script_error is not None:
        inv.output.write("script_error.txt", script_error["traceback"])
    summary = codegen_summary.build(
        inv,
        torch_version=torch.__version__,
        line=report["line"],
        standin=standin,
        imported_torch_npu=imported_torch_npu,
        events=events,
        script_error=script_error,
        graphs=graphs,
        cpu_fallback=cpu_fallback,
    )
    header_failures, kernel_failures, static_failures = codegen_summary.check(inv, summary, progress)
    refused = codegen_summary.write(inv.output, summary)
    failed = bool(capture.failed())
    return Outcome(summary, script_error, failed, refused, header_failures, kernel_failures, static_failures)


@contextmanager
def _script_environment(
    inv: Invocation, standin_context: Any, progress: Progress, cpp_runtime: Any
) -> Iterator[tuple[Any, Any]]:
    """What the script runs in: the torch_npu stand-in, every graph captured codegen-only, its argv; (the
    stand-in, the capture)."""
    from npu_inductor_compat.tools.simulated.codegen.capture import capturing
    from npu_inductor_compat.tools.simulated.codegen.kernel_params import simulated_metadata

    with (
        warnings.catch_warnings(),
        standin_context as standin,
        capturing(
            progress.graph,
            codegen_settings(inv.args.cpp_wrapper, inv.args.dynamic),
            execute=inv.args.execute,
            max_configs=inv.args.max_configs,
        ) as capture,
        cuda_notes_dropped(),
        simulated_metadata(inv.metadata),
        script_argv(inv.script, inv.script_args),
    ):
        capture.on_execution = progress.executed
        capture.on_launch = progress.launched
        capture.cpp_runtime = cpp_runtime
        # our capture turns Inductor's caches off, and Dynamo says so once per run: not the script's business
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
        yield standin, capture


def _run_script(script: Path) -> tuple[dict[str, Any] | None, bool]:
    """SCRIPT run as __main__: (its failure, reported rather than raised, or None; whether it imported torch_npu)."""
    try:
        namespace = runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            return {"type": "SystemExit", "message": str(exit_.code), "traceback": ""}, False
        return None, False
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # the script's own failure is reported, not raised
        return {"type": type(err).__name__, "message": str(err), "traceback": traceback.format_exc()}, False
    # the deep stand-in is imported by torch_npu's backend before the script runs, so the finder never sees the
    # script's own import: read it from the script's globals
    module = sys.modules.get("torch_npu")
    return None, module is not None and any(value is module for value in namespace.values())
