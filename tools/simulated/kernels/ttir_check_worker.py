"""The worker end of torch_npu's TTIR check and template precompile (runs under triton-ascend): each request on
stdin, one JSON answer a line (ttir_check.py is the codegen process's end)."""

from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.simulated.kernels.host_triton_meta import as_on_the_host, constexpr_names
from npu_inductor_compat.tools.simulated.kernels.torch_npu_bridges import torch_npu_environment
from npu_inductor_compat.tools.simulated.kernels.worker_protocol import emit, open_channel, tail

TTIR_WORKER = "--ttir-check-worker"  # this worker's first argument (its client: ttir_check.py)


def _resolve_method(target: str) -> tuple[Any, Callable[..., Any]]:
    """``"module:Class.method"`` -> (an instance of Class made without running its ``__init__``, the function).
    torch_npu's ``make_ttir_for_check`` reads nothing of its ``self`` (a scheduling, which needs a scheduler)."""
    owner, method = Target.parse(target).owner()
    return owner.__new__(owner), getattr(owner, method)


@contextlib.contextmanager
def _loading_as_on_the_host() -> Iterator[None]:
    """The check loads the kernel's module (PyCodeCache.load) and compiles its autotuner's config: the autotuner's
    triton_meta is first given the form torch writes where triton-ascend is the triton (host_triton_meta.py)."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    original = PyCodeCache.__dict__["load"]
    load = original.__func__

    def loading(cls: Any, *args: Any, **kwargs: Any) -> Any:
        module = load(cls, *args, **kwargs)
        for value in list(vars(module).values()):
            if isinstance(value, CachingAutotuner) and isinstance(value.triton_meta, dict):
                as_on_the_host(value.triton_meta, constexpr_names(value.fn))
        return module

    PyCodeCache.load = classmethod(loading)  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        PyCodeCache.load = original  # type: ignore[method-assign]


class PrecompileFailed(RuntimeError):
    """No config of a template choice got through triton-ascend's front end (what torch_npu's precompile raises
    then: NoTritonConfigsError, runtime/triton_heuristics.py ``_precompile_configs``); the first config's error."""


class _Precompiler:
    """A template choice's precompile as torch_npu runs it on an Ascend host (its autotuner's ``precompile``: each
    config through ``_precompile_config`` to ``triton.compile``; an error when none compiles), with triton-ascend's
    ``triton.compile`` run up to linalg (kernel_stages.through_stages; npubin needs CANN)."""

    def __init__(self) -> None:
        self._modules: str | None = None

    def lower(self, kernel: str, source: str) -> list[dict[str, Any]]:
        import tempfile
        from pathlib import Path

        from npu_inductor_compat.tools.simulated.codegen.kernel_params import driver_selection_inert
        from npu_inductor_compat.tools.simulated.kernels import kernel_stages

        if self._modules is None:
            import atexit
            import shutil

            kernel_stages.stop_at_triton_compile()  # triton.compile's arguments, then the stages here
            self._modules = tempfile.mkdtemp(prefix="npu_template_precompile_")
            atexit.register(shutil.rmtree, self._modules, True)
        file = Path(self._modules) / f"{kernel}.py"
        file.write_text(source)
        with driver_selection_inert():
            name, autotuner = kernel_stages.load_kernel(file, Path(self._modules))
            if isinstance(getattr(autotuner, "triton_meta", None), dict):
                as_on_the_host(autotuner.triton_meta, constexpr_names(autotuner.fn))
            results = []
            for number, config in enumerate(autotuner.configs):
                result: dict[str, Any] = {"kernel": name, "config": dict(config.kwargs), "stage": None}
                result.update(ok=False, error=None, seconds={})
                kernel_stages.through_stages(result, f"{name}::{number}", autotuner, autotuner.fn, {}, config)
                results.append(result)
        if not any(result["ok"] for result in results):
            raise PrecompileFailed(results[0]["error"] if results else f"{name} has no config")
        return results


def _check_message(error: BaseException) -> str:
    """The check's error in the compiler's words: torch_npu's NoTritonConfigsError carries the compiler's message,
    then the worker's stack trace (kept apart, as the check's traceback)."""
    return f"{type(error).__name__}: {str(error).split(chr(10) + 'Stack trace:', 1)[0].strip()}"


def _ttir_worker(release: str, target: str) -> int:  # pragma: no cover - runs under triton-ascend
    """The worker end: torch_npu ``release``'s environment, then one JSON request a line on stdin (``id``,
    ``source``: the kernel source torch_npu's scheduling passed to its check, ``target``'s; or ``kind``
    "precompile", ``kernel`` and its module ``source``: a template choice), one answer each: ``ok``, ``error``,
    ``traceback``, ``worker_error`` (the failure is this tool's, e.g. a missing stub, not the compiler's), and for a
    precompile ``configs``: each config's result (kernel_stages.through_stages)."""
    from npu_inductor_compat.tools.simulated.npu.not_simulated import NotSimulatedError

    open_channel()
    began = time.perf_counter()
    try:
        with torch_npu_environment(release) as environment, _loading_as_on_the_host():
            instance, check = _resolve_method(target) if target else (None, None)
            ready = {key: value for key, value in environment.items() if key != "missing_stubs"}
            emit({"event": "ready", "seconds": round(time.perf_counter() - began, 1), **ready})
            precompiling = _Precompiler()
            while line := sys.stdin.readline():
                request = json.loads(line)
                answer: dict[str, Any] = {"event": "checked", "id": request["id"], "ok": True, "error": None}
                began = time.perf_counter()
                try:
                    if request.get("kind") == "precompile":
                        answer["configs"] = precompiling.lower(request["kernel"], request["source"])
                    elif check is None:
                        raise RuntimeError(f"torch_npu {release} has no TTIR check to run")
                    else:
                        check(instance, request["source"])
                except Exception as err:
                    answer.update(ok=False, error=_check_message(err), traceback=tail(traceback.format_exc(), 80))
                    answer["worker_error"] = isinstance(err, NotSimulatedError)
                answer["seconds"] = round(time.perf_counter() - began, 3)
                answer["missing_stubs"] = list(environment["missing_stubs"])
                emit(answer)
    except Exception as err:
        print(traceback.format_exc(), file=sys.stderr)
        emit({"event": "failed", "error": f"{type(err).__name__}: {err}"})
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the worker's entry point
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == TTIR_WORKER:
        return _ttir_worker(args[1], args[2])
    print("internal worker of torch_npu's TTIR check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
