"""The worker of ``codegen --check-kernels`` (runs under triton-ascend): each config of each kernel file to TTIR, TTIR
passes, then linalg, stopping before npubin; one JSON event per stage and result (worker_protocol.py)."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.host_triton_meta import as_on_the_host, constexpr_names
from npu_inductor_compat.tools.simulated.kernel_check import STAGES, config_time_records
from npu_inductor_compat.tools.simulated.kernel_params import driver_selection_inert
from npu_inductor_compat.tools.simulated.torch_npu_bridges import torch_npu_environment
from npu_inductor_compat.tools.simulated.worker_protocol import emit, exit_text, open_channel, tail

TARGET_ARCH = "Ascend910B3"  # read only by npubin, which is not run


def kernel_source(path: Path) -> tuple[str, str]:
    """(kernel name, module source) of a kernel file: the ``async_compile.triton(name, '''source''')`` fragment
    Inductor defines kernels with, or a plain module named like the file."""
    text = path.read_text()
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "triton"
            and len(node.args) >= 2
            and all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in node.args[:2])
        ):
            return str(node.args[0].value), str(node.args[1].value)  # type: ignore[attr-defined]
    return path.stem, text


def _compiler_message(error: BaseException) -> str:
    """The compiler's own words: an aborted triton-adapter-opt prints its assertion before LLVM's stack dump."""
    if isinstance(error, subprocess.CalledProcessError):
        stderr = error.stderr.decode("utf-8", "replace") if isinstance(error.stderr, bytes) else error.stderr or ""
        head = []
        for line in stderr.splitlines():
            if line.startswith(("PLEASE submit a bug report", "Stack dump:")):
                break
            head.append(line)
        tool = Path(str(error.cmd[0])).name if error.cmd else "compiler"
        return f"{tool} {exit_text(error.returncode)}:\n{tail(chr(10).join(head) or stderr, 40)}"
    return f"{type(error).__name__}: {error}"


def _divisible_arguments(triton_meta: dict[str, Any]) -> list[int]:
    """Indices Inductor marks 16-divisible (``triton_meta['configs']``: {(index,): [['tt.divisibility', 16]]})."""
    indices = set()
    for config in triton_meta.get("configs", []):
        if isinstance(config, dict):
            for key, properties in config.items():
                if any(prop[0] == "tt.divisibility" for prop in properties):
                    indices.add(key[0])
    return sorted(indices)


def _stock_ttir(backend: Any, fn: Any, triton_meta: dict[str, Any], config: Any) -> tuple[Any, Any]:
    """A stock Inductor kernel's config to TTIR (AST -> TTIR, as triton.compile's first stage): (module, options)."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import AttrsDescriptor
    from triton.compiler.compiler import ASTSource

    kwargs = dict(config.kwargs)
    constants = {**(triton_meta.get("constants") or {}), **kwargs}
    signature = {
        arg: kind for arg, kind in triton_meta["signature"].items() if kind != "constexpr" and arg not in constants
    }
    attrs = AttrsDescriptor.from_dict(
        {
            "arg_properties": {"tt.divisibility": _divisible_arguments(triton_meta), "tt.equal_to": []},
            "cls": "AscendAttrsDescriptor",
        }
    )
    options = backend.parse_options({"num_warps": config.num_warps, "num_stages": config.num_stages})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    ir_module = ASTSource(fn, signature, constants, attrs).make_ir(
        options, backend.get_codegen_implementation(), backend.get_module_map(), context
    )
    return ir_module, options


class _CompileCalled(BaseException):
    """triton.compile was called (by torch_npu's precompile): its arguments. A BaseException, so torch_npu's own
    ``except Exception`` around the call lets it through."""

    def __init__(self, src: Any, target: Any, options: Any) -> None:
        super().__init__("triton.compile")
        self.src, self.target, self.options = src, target, options


def _stop_at_triton_compile() -> None:
    """In the worker: ``triton.compile`` raises :class:`_CompileCalled` with its arguments instead of compiling
    (torch_npu's heuristics call it as ``triton.compile``, at each call): the stages up to linalg then run here."""
    import triton

    def compile(src: Any, target: Any = None, options: Any = None) -> Any:
        raise _CompileCalled(src, target, options)

    triton.compile = compile


def _torch_npu_ttir(autotuner: Any, config: Any) -> tuple[Any, Any, Any]:
    """A torch_npu kernel's config to TTIR as torch_npu compiles it on an NPU: its own
    ``NPUCachingAutotuner._precompile_config`` (runtime/triton_heuristics.py; npu_triton_heuristics.py in 2.12) builds
    the ASTSource (its compile meta and constants), the target and the triton-ascend options, and calls
    ``triton.compile``; from there, what triton-ascend's ``triton.compile`` does (triton/compiler/compiler.py): the
    backend, ``parse_options`` with the source's own, the dialects, ``make_ir``. (module, backend, options)."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    try:
        autotuner._precompile_config(config)
    except _CompileCalled as called:
        src, target, options = called.src, called.target, called.options
    else:
        raise RuntimeError("torch_npu's _precompile_config did not call triton.compile")
    backend = make_backend(target)
    options = backend.parse_options(dict(options or {}, **src.parse_options()))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    ir_module = src.make_ir(options, backend.get_codegen_implementation(), backend.get_module_map(), context)
    return ir_module, backend, options


def torch_npu_ttir(files: list[Path], torch_npu: str) -> dict[str, str]:  # pragma: no cover - under triton-ascend
    """The TTIR text of each kernel file's first config as torch_npu ``torch_npu``'s precompile builds it, in the
    environment the worker lowers its kernels in: for tests that read the IR itself (which ops a kernel reduces by)."""
    texts = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch_npu_environment(torch_npu))
        _stop_at_triton_compile()
        stack.enter_context(driver_selection_inert())
        modules = tempfile.mkdtemp(prefix="npu_kernel_ttir_")
        stack.callback(shutil.rmtree, modules, True)
        for file in files:
            _, autotuner = _load_kernel(file, Path(modules))
            as_on_the_host(autotuner.triton_meta, constexpr_names(autotuner.fn))
            texts[str(file)] = str(_torch_npu_ttir(autotuner, autotuner.configs[0])[0])
    return texts


def _load_kernel(file: Path, modules: Path) -> tuple[str, Any]:
    """(kernel name, its autotuner or jit function): the kernel file's module, loaded from a copy in a folder of its
    own under ``modules``: two graphs may name different kernels alike, and a bytecode file cached for the first
    (same size, same second) would be taken for the second."""
    name, source = kernel_source(file)
    module_path = Path(tempfile.mkdtemp(dir=modules)) / f"{name}.py"
    module_path.write_text(source)  # triton.jit reads the function's source from a real file
    spec = importlib.util.spec_from_file_location(name, module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return name, getattr(module, name)


def _worker(  # pragma: no cover
    torch_npu: str | None = None,
    records: tuple[str, ...] = (),
    max_configs: int | None = None,
) -> int:
    """Lower every config of each kernel file its stdin names, one JSON message a line (``file``, ``skip``: keys
    of the configs already done), to the end of its input; it says "ready" once set up (runs under triton-ascend).
    ``torch_npu``: the release whose kernels they are (they load in :func:`torch_npu_environment`); ``records``: ids
    of the config-time fix records the codegen run applied, applied here too before any kernel loads
    (kernel_check.config_time_records); ``max_configs``: only each kernel's first configs, in the order its
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
            message = f"torch_npu {torch_npu}'s environment failed to load: {_compiler_message(err)}"
            print(traceback.format_exc(), file=sys.stderr)
            emit({"event": "result", "key": "::environment", "result": _failure(None, message)})
            return 1
        emit({"event": "environment", **{key: environment[key] for key in ("torch_npu", "unstubbed", "bridges")}})
        _stop_at_triton_compile()
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
        name, autotuner = _load_kernel(Path(file), modules)
    except Exception as err:
        if key not in skip:
            message = f"loading the kernel failed: {_compiler_message(err)}"
            emit({"event": "result", "key": key, "result": _failure(file, message)})
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


def through_stages(
    result: dict[str, Any],
    key: str,
    autotuner: Any,
    fn: Any,
    triton_meta: dict[str, Any],
    config: Any,
    backend: Any = None,
    started: Callable[[str, str | None], None] = lambda stage, reached: None,
) -> None:
    """One config to TTIR, TTIR passes, then linalg (not npubin), recording into ``result`` (``stage`` reached,
    ``ok``, ``error``: the compiler's message, ``seconds`` per stage, ``note``). ``autotuner``: torch_npu's, whose
    own precompile builds the TTIR (None: a stock kernel, ``fn`` compiled with ``triton_meta`` for triton-ascend's
    ``backend``). ``started(stage, reached)`` is told before each stage."""
    stage = STAGES[0]
    started(stage, None)
    try:
        began = time.perf_counter()
        if autotuner is None:
            ir_module, options = _stock_ttir(backend, fn, triton_meta, config)
        else:
            ir_module, backend, options = _torch_npu_ttir(autotuner, config)
        result["seconds"][stage], result["stage"] = round(time.perf_counter() - began, 3), stage
        # a hex digest, as triton.compile's hash: a debug compile (torch sets debug for its templates) dumps each
        # stage under it (triton/runtime/cache.py get_dump_manager reads it as hex)
        metadata = {"hash": hashlib.sha256(key.encode()).hexdigest(), "target": backend.target, **options.__dict__}
        stages: dict[str, Any] = {}
        backend.add_stages(stages, options)
        for stage, backend_stage in (("ttir-passes", "ttir"), ("linalg", "ttadapter")):  # not npubin
            if backend_stage not in stages:
                # a SIMT-only config (force_simt_only): triton-ascend's add_stages (backends/ascend/
                # compiler.py) goes from TTIR straight to an NPU binary (CANN), with no linalg stage
                result["note"] = f"no {stage} stage: triton-ascend compiles this config from TTIR with CANN"
                break
            started(stage, result["stage"])
            began = time.perf_counter()
            ir_module = stages[backend_stage](ir_module, metadata)
            result["seconds"][stage], result["stage"] = round(time.perf_counter() - began, 3), stage
        result["ok"] = True
    except Exception as err:
        result["error"] = f"{stage}: {_compiler_message(err)}"


def _failure(file: str | None, message: str) -> dict[str, Any]:
    return {"file": file, "config": None, "stage": None, "ok": False, "error": message, "seconds": {}}


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
