"""One kernel config through triton-ascend's compiler front end (TTIR, its passes, linalg; npubin needs CANN), as
the kernel workers run it: loading a kernel file, torch_npu's own precompile stopped at ``triton.compile``."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import Patch
from npu_inductor_compat.tools.simulated.kernels.worker_protocol import exit_text, tail

STAGES = ("ttir", "ttir-passes", "linalg")  # what each config goes through, in order


def config_time_records() -> dict[str, Patch]:
    """Fix records whose changes run when a kernel's configs are built (torch_npu's heuristics, as its module
    loads): the worker loads each kernel again and builds its configs, so it applies those the codegen run applied."""
    from npu_inductor_compat.common.fixes import torch_npu_long_rows, torch_npu_split_blocks

    return {record.id: record for record in (*torch_npu_long_rows.FIXES, *torch_npu_split_blocks.FIXES)}


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


def compiler_message(error: BaseException) -> str:
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


def stop_at_triton_compile() -> None:
    """In the worker: ``triton.compile`` raises :class:`_CompileCalled` with its arguments instead of compiling
    (torch_npu's heuristics call it as ``triton.compile``, at each call): the stages up to linalg then run here."""
    import triton

    def compile(src: Any, target: Any = None, options: Any = None) -> Any:
        raise _CompileCalled(src, target, options)

    triton.compile = compile


def torch_npu_config_ttir(autotuner: Any, config: Any) -> tuple[Any, Any, Any]:
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


def load_kernel(file: Path, modules: Path) -> tuple[str, Any]:
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
            ir_module, backend, options = torch_npu_config_ttir(autotuner, config)
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
        result["error"] = f"{stage}: {compiler_message(err)}"


def failure(file: str | None, message: str) -> dict[str, Any]:
    return {"file": file, "config": None, "stage": None, "ok": False, "error": message, "seconds": {}}
