"""The worker of ``codegen --check-kernels`` (runs under triton-ascend): each config of each kernel file to TTIR, TTIR
passes, then linalg, stopping before npubin; one JSON event per stage and result (worker_protocol.py)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.codegen.kernel_params import driver_selection_inert
from npu_inductor_compat.tools.simulated.kernels.host_triton_meta import as_on_the_host, constexpr_names
from npu_inductor_compat.tools.simulated.kernels.kernel_stages import (
    compiler_message,
    config_time_records,
    failure,
    load_kernel,
    stop_at_triton_compile,
    through_stages,
    torch_npu_config_ttir,
)
from npu_inductor_compat.tools.simulated.kernels.torch_npu_bridges import torch_npu_environment
from npu_inductor_compat.tools.simulated.kernels.worker_protocol import emit, open_channel

TARGET_ARCH = "Ascend910B3"  # read only by npubin, which is not run


def torch_npu_ttir(files: list[Path], torch_npu: str) -> dict[str, str]:  # pragma: no cover - under triton-ascend
    """The TTIR text of each kernel file's first config as torch_npu ``torch_npu``'s precompile builds it, in the
    environment the worker lowers its kernels in: for tests that read the IR itself (which ops a kernel reduces by)."""
    texts = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch_npu_environment(torch_npu))
        stop_at_triton_compile()
        stack.enter_context(driver_selection_inert())
        modules = tempfile.mkdtemp(prefix="npu_kernel_ttir_")
        stack.callback(shutil.rmtree, modules, True)
        for file in files:
            _, autotuner = load_kernel(file, Path(modules))
            as_on_the_host(autotuner.triton_meta, constexpr_names(autotuner.fn))
            texts[str(file)] = str(torch_npu_config_ttir(autotuner, autotuner.configs[0])[0])
    return texts


def _worker(  # pragma: no cover
    torch_npu: str | None = None,
    records: tuple[str, ...] = (),
    max_configs: int | None = None,
) -> int:
    """Lower every config of each kernel file its stdin names, one JSON message a line (``file``, ``skip``: keys
    of the configs already done), to the end of its input; it says "ready" once set up (runs under triton-ascend).
    ``torch_npu``: the release whose kernels they are (they load in :func:`torch_npu_environment`); ``records``: ids
    of the config-time fix records the codegen run applied, applied here too before any kernel loads
    (kernel_stages.config_time_records); ``max_configs``: only each kernel's first configs, in the order its
    heuristics list them. A "done" event ends each file."""
    import triton.language as tl
    from torch._inductor.runtime import triton_helpers
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    open_channel()
    stack = contextlib.ExitStack()
    if torch_npu is None:
        triton_helpers.libdevice = tl.extra.ascend.libdevice  # as torch_npu's npu_triton_helpers binds it
    else:
        try:
            environment = stack.enter_context(torch_npu_environment(torch_npu))
        except Exception as err:
            message = f"torch_npu {torch_npu}'s environment failed to load: {compiler_message(err)}"
            print(traceback.format_exc(), file=sys.stderr)
            emit({"event": "result", "key": "::environment", "result": failure(None, message)})
            return 1
        emit({"event": "environment", **{key: environment[key] for key in ("torch_npu", "unstubbed", "bridges")}})
        stop_at_triton_compile()
        if records:
            journal = Journal()
            journal.apply([config_time_records()[key] for key in records])
            stack.callback(journal.undo)
    # kernel modules select the GPU driver at load: triton-ascend's is active only with CANN, and nothing launches
    stack.enter_context(driver_selection_inert())
    backend = make_backend(GPUTarget("npu", TARGET_ARCH, 0))
    modules = tempfile.mkdtemp(prefix="npu_kernel_check_")
    stack.callback(shutil.rmtree, modules, True)
    emit({"event": "ready"})
    for line in sys.stdin:
        message = json.loads(line)
        lower_file(message["file"], set(message.get("skip") or ()), backend, Path(modules), torch_npu, max_configs)
    stack.close()
    return 0


def lower_file(  # pragma: no cover - under triton-ascend
    file: str, skip: set[str], backend: Any, modules: Path, torch_npu: str | None, max_configs: int | None
) -> None:
    """Every config of one kernel file not in ``skip``, a "result" event each, then "done"."""
    key = f"{file}::load"
    try:
        name, autotuner = load_kernel(Path(file), modules)
    except Exception as err:
        if key not in skip:
            message = f"loading the kernel failed: {compiler_message(err)}"
            emit({"event": "result", "key": key, "result": failure(file, message)})
        emit({"event": "done", "file": file, "configs": 1, "checked": 1})
        return
    if torch_npu is not None and isinstance(getattr(autotuner, "triton_meta", None), dict):
        # torch_npu's precompile passes it to triton.compile as it is
        as_on_the_host(autotuner.triton_meta, constexpr_names(getattr(autotuner, "fn", autotuner)))
    fn = getattr(autotuner, "fn", autotuner)
    triton_meta = dict(getattr(autotuner, "triton_meta", None) or {})
    configs = list(getattr(autotuner, "configs", None) or []) or [
        types.SimpleNamespace(kwargs={}, num_warps=4, num_stages=1)
    ]
    checked = configs[:max_configs] if max_configs is not None else configs
    for number, config in enumerate(checked):
        kwargs = dict(config.kwargs)
        key = f"{file}::{number}"
        if key in skip:
            continue
        result: dict[str, Any] = {
            "file": file,
            "kernel": name,
            "config": kwargs,
            "stage": None,
            "ok": False,
            "error": None,
            "seconds": {},
        }
        started = _announcing(key, file, name, kwargs)
        ours = autotuner if torch_npu is not None else None
        through_stages(result, key, ours, fn, triton_meta, config, backend, started)
        emit({"event": "result", "key": key, "result": result})
    emit({"event": "done", "file": file, "kernel": name, "configs": len(configs), "checked": len(checked)})


def _announcing(key: str, file: str, kernel: str, config: dict[str, Any]) -> Callable[[str, str | None], None]:
    """Tell the codegen process which stage of which config starts (a hang is charged to it)."""

    def started(stage: str, reached: str | None) -> None:
        event = {"event": "start", "key": key, "file": file, "kernel": kernel, "config": config, "stage": stage}
        emit({**event, "reached": reached} if reached is not None else event)

    return started


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the worker's entry point
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "--worker":
        print("internal worker of `codegen --check-kernels`", file=sys.stderr)
        return 2
    options = {arg.partition("=")[0]: arg.partition("=")[2] for arg in args[1:] if arg.startswith("--")}
    records = tuple(key for key in options.get("--records", "").split(",") if key)
    limit = options.get("--max-configs")
    return _worker(options.get("--torch-npu") or None, records, int(limit) if limit else None)


if __name__ == "__main__":
    sys.exit(main())
