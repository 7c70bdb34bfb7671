"""``codegen --check-kernels``: every generated Triton kernel, per autotune config, through triton-ascend's compiler.

triton-ascend's wheel carries its compiler front end (libtriton and ``triton-adapter-opt``); only the last stage,
npubin (CANN's ``bishengir-compile``), needs the CANN toolkit. So each config goes AST -> TTIR (the Python code
generator), TTIR passes (libtriton, in process), then TTIR -> linalg (``triton-adapter-opt``, a subprocess), and
stops before npubin. The stage reached and, on failure, the compiler's own message go into summary.json.

triton-ascend owns the top-level ``triton`` package, like torch's own ``triton``: the two cannot share an
environment. It is therefore used from its own directory, put first on the path of a worker process only: the
directory named by $NPU_INDUCTOR_COMPAT_TRITON_ASCEND, this environment's ``triton`` when that is triton-ascend, or
else the PyPI wheel installed (``pip install --target``, never into this environment) once into the survey's cache.
The user's ``triton`` is never touched.

Without CANN there is no active Triton driver, so the kernel module's ``set_driver_to_gpu()`` is made inert, and
Inductor's ``libdevice`` (empty stubs on triton-ascend) is bound to ``tl.extra.ascend.libdevice``, as torch_npu's
own ``npu_triton_helpers`` binds it for every kernel an Ascend run compiles. A worker that dies inside the compiler
(an assertion in ``triton-adapter-opt`` aborts only that subprocess; libtriton aborts the worker) costs only the
config it was lowering: the others are lowered by a fresh worker.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SITE_ENV = "NPU_INDUCTOR_COMPAT_TRITON_ASCEND"
TRITON_ASCEND = "3.2.0"  # the release on PyPI (its only one)
TARGET_ARCH = "Ascend910B3"  # read only by npubin, which is not run
STAGES = ("ttir", "ttir-passes", "linalg")  # what each config goes through, in order
LIBDEVICE = "tl.extra.ascend.libdevice (torch_npu's npu_triton_helpers binding)"


class KernelCheckUnavailable(RuntimeError):
    """triton-ascend cannot be found or installed (the message says what was tried)."""


@dataclass(frozen=True)
class TritonAscend:
    site: Path | None  # the directory to put first on the worker's path; None: this environment has it
    version: str
    source: str


def _version_in(site: Path) -> str:
    import importlib.metadata

    for distribution in importlib.metadata.distributions(path=[str(site)]):
        if distribution.metadata["Name"].lower().replace("_", "-") == "triton-ascend":
            return str(distribution.version)
    init = site / "triton" / "__init__.py"
    found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", init.read_text()) if init.is_file() else None
    return found.group(1) if found else "unknown"


def _is_triton_ascend(site: Path) -> bool:
    return (site / "triton" / "backends" / "ascend" / "compiler.py").is_file()


def locate() -> TritonAscend:
    """Where triton-ascend comes from, installing the wheel into the cache on first use."""
    import importlib.util

    explicit = os.environ.get(SITE_ENV)
    if explicit:
        site = Path(explicit)
        if not _is_triton_ascend(site):
            raise KernelCheckUnavailable(f"{SITE_ENV}={explicit} has no triton/backends/ascend/compiler.py")
        return TritonAscend(site, _version_in(site), f"{SITE_ENV}={explicit}")
    spec = importlib.util.find_spec("triton")  # locates the package; runs none of it
    for location in (spec.submodule_search_locations or []) if spec else []:
        if _is_triton_ascend(Path(location).parent):
            return TritonAscend(None, _version_in(Path(location).parent), "this environment's triton")
    return _cached_install()


def _cached_install() -> TritonAscend:
    from npu_inductor_compat.tools import survey

    root = survey.default_cache_dir().parent / "triton_ascend" / TRITON_ASCEND
    if _is_triton_ascend(root):
        return TritonAscend(root, _version_in(root), f"triton-ascend {TRITON_ASCEND} wheel ({root})")
    print(
        f"installing triton-ascend {TRITON_ASCEND} (about 55 MB, with pybind11) into {root}, once; the environment's "
        "triton is not touched",
        file=sys.stderr,
    )
    partial = root.with_name(root.name + ".partial")
    command = [*survey._pip(), "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"]
    command += [str(partial), f"triton-ascend=={TRITON_ASCEND}", "pybind11"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired, survey.SurveyError) as err:
        raise KernelCheckUnavailable(f"installing triton-ascend failed: {err}; set {SITE_ENV}") from err
    if done.returncode != 0 or not _is_triton_ascend(partial):
        raise KernelCheckUnavailable(
            f"installing triton-ascend {TRITON_ASCEND} failed ({done.stderr.strip()[-500:]}); set {SITE_ENV} to a "
            "directory holding it"
        )
    os.replace(partial, root)  # a half-installed directory is never taken for a finished one
    return TritonAscend(root, _version_in(root), f"triton-ascend {TRITON_ASCEND} wheel ({root})")


# ---------------------------------------------------------------------------------------------- orchestration
def kernel_files(out: Path, summary: dict[str, Any]) -> list[tuple[int, str, Path]]:
    """(graph index, kernel name, file) of every Triton kernel the codegen run wrote, from the summary's file index
    (a graph may also hold C++ kernels for CPU tensors, e.g. an optimizer's step counts: triton-ascend never sees
    those)."""
    found = []
    for graph in summary["graphs"]:
        for name, entry in graph["files"]["kernels"].items():
            if entry["defined_with"] == "triton" and entry["source"] is not None:
                found.append((graph["index"], name, out / entry["source"]))
    return found


def lower(files: list[Path], triton_ascend: TritonAscend, timeout: float = 900) -> list[dict[str, Any]]:
    """One result per (kernel file, config): ``file``, ``config``, ``stage`` reached (None, or one of STAGES),
    ``ok`` (reached linalg), ``error`` (the compiler's message), ``seconds`` per stage."""
    env = dict(os.environ)
    if triton_ascend.site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_ascend.site), env.get("PYTHONPATH")]))
    results: list[dict[str, Any]] = []
    done_keys: list[str] = []
    while True:
        command = [sys.executable, "-m", "npu_inductor_compat.tools.simulated.kernel_check", "--worker"]
        command += [f"--skip={key}" for key in done_keys] + [str(path) for path in files]
        try:
            worker = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)
            stdout, stderr, code = worker.stdout, worker.stderr, worker.returncode
        except subprocess.TimeoutExpired as err:
            stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
            stderr, code = f"timed out after {timeout:.0f} s", None
        current = None
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "start":
                current = event
            elif event.get("event") == "result":
                results.append(event["result"])
                done_keys.append(event["key"])
                current = None
        if current is None:
            if code != 0:
                message = f"the triton-ascend worker failed (exit {code}):\n{_tail(stderr)}"
                results.append({"file": None, "config": None, "stage": None, "ok": False, "error": message})
            return results
        # the worker died (or hung) inside one config: record that config, and go on after it
        how = "hung" if code is None else f"died ({_exit_text(code)})"
        results.append(
            {
                "file": current["file"],
                "kernel": current["kernel"],
                "config": current["config"],
                "stage": current.get("reached"),
                "ok": False,
                "error": f"the compiler {how} in stage {current['stage']}:\n{_tail(stderr)}",
                "seconds": {},
            }
        )
        done_keys.append(current["key"])


def _exit_text(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def check(out: Path, summary: dict[str, Any]) -> int:
    """Lower every kernel the codegen run wrote; record the results in the summary; return the rejected configs."""
    try:
        triton_ascend = locate()
    except KernelCheckUnavailable as err:
        summary["kernel_check"] = {"triton_ascend": None, "error": str(err)}
        return sum(len(graph["kernels"]) for graph in summary["graphs"]) or 1
    files = kernel_files(out, summary)
    if files:
        print(
            f"lowering {len(files)} Triton kernel(s), every autotune config, through triton-ascend "
            f"{triton_ascend.version}'s front end (TTIR, then linalg; a few seconds per config) ...",
            file=sys.stderr,
            flush=True,
        )
    start = time.perf_counter()
    results = lower([path for _, _, path in files], triton_ascend) if files else []
    by_file: dict[str, list[dict[str, Any]]] = {}
    orphans = []
    for result in results:
        if result.get("file") is None:
            orphans.append(result)
        else:
            by_file.setdefault(result["file"], []).append(result)
    rejected = len(orphans) + sum(1 for result in results if result.get("file") and not result["ok"])
    for graph in summary["graphs"]:
        graph["kernel_check"] = {
            name: [
                {key: result.get(key) for key in ("config", "stage", "ok", "error", "seconds")}
                for result in by_file.get(str(path), [])
            ]
            for index, name, path in files
            if index == graph["index"]
        }
    summary["kernel_check"] = {
        "triton_ascend": triton_ascend.version,
        "source": triton_ascend.source,
        "stages": list(STAGES),
        "libdevice": LIBDEVICE,
        "configs": len(results),
        "rejected": rejected,
        "seconds": round(time.perf_counter() - start, 1),
        "error": "\n".join(result["error"] for result in orphans) or None,
    }
    return rejected


# ---------------------------------------------------------------------------------------------- worker
def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


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
        return f"{tool} {_exit_text(error.returncode)}:\n{_tail(chr(10).join(head) or stderr, 40)}"
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


def _worker(files: list[str], skip: set[str]) -> int:  # pragma: no cover - runs under triton-ascend
    import importlib.util
    import tempfile

    import triton.language as tl
    from torch._inductor.runtime import triton_helpers
    from triton._C.libtriton import ir
    from triton.backends.compiler import AttrsDescriptor, GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    triton_helpers.set_driver_to_gpu = lambda: None  # no driver without CANN; nothing is launched
    triton_helpers.libdevice = tl.extra.ascend.libdevice  # as torch_npu's npu_triton_helpers binds it
    target = GPUTarget("npu", TARGET_ARCH, 0)
    backend = make_backend(target)
    modules = tempfile.mkdtemp(prefix="npu_kernel_check_")
    for file in files:
        key = f"{file}::load"
        try:
            name, source = kernel_source(Path(file))
            module_path = Path(modules) / f"{name}.py"
            module_path.write_text(source)  # triton.jit reads the function's source from a real file
            spec = importlib.util.spec_from_file_location(name, module_path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            autotuner = getattr(module, name)
        except Exception as err:
            if key not in skip:
                _emit(
                    {
                        "event": "result",
                        "key": key,
                        "result": {
                            "file": file,
                            "config": None,
                            "stage": None,
                            "ok": False,
                            "error": f"loading the kernel failed: {_compiler_message(err)}",
                            "seconds": {},
                        },
                    }
                )
            continue
        fn = getattr(autotuner, "fn", autotuner)
        triton_meta = dict(getattr(autotuner, "triton_meta", None) or {})
        configs = [(dict(c.kwargs), c.num_warps, c.num_stages) for c in getattr(autotuner, "configs", [])] or [
            ({}, 4, 1)
        ]
        divisible = _divisible_arguments(triton_meta)
        for number, (kwargs, num_warps, num_stages) in enumerate(configs):
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
            stage = STAGES[0]
            _emit({"event": "start", "key": key, "file": file, "kernel": name, "config": kwargs, "stage": stage})
            try:
                constants = {**(triton_meta.get("constants") or {}), **kwargs}
                signature = {
                    arg: kind
                    for arg, kind in triton_meta["signature"].items()
                    if kind != "constexpr" and arg not in constants
                }
                attrs = AttrsDescriptor.from_dict(
                    {
                        "arg_properties": {"tt.divisibility": divisible, "tt.equal_to": []},
                        "cls": "AscendAttrsDescriptor",
                    }
                )
                options = backend.parse_options({"num_warps": num_warps, "num_stages": num_stages})
                metadata = {"hash": key, "target": target, **options.__dict__}
                stages: dict[str, Any] = {}
                backend.add_stages(stages, options)
                context = ir.context()
                ir.load_dialects(context)
                backend.load_dialects(context)
                began = time.perf_counter()
                ir_module = ASTSource(fn, signature, constants, attrs).make_ir(
                    options, backend.get_codegen_implementation(), backend.get_module_map(), context
                )
                result["seconds"][stage], result["stage"] = round(time.perf_counter() - began, 3), stage
                for stage, backend_stage in (("ttir-passes", "ttir"), ("linalg", "ttadapter")):  # not npubin
                    _emit(
                        {
                            "event": "start",
                            "key": key,
                            "file": file,
                            "kernel": name,
                            "config": kwargs,
                            "stage": stage,
                            "reached": result["stage"],
                        }
                    )
                    began = time.perf_counter()
                    ir_module = stages[backend_stage](ir_module, metadata)
                    result["seconds"][stage], result["stage"] = round(time.perf_counter() - began, 3), stage
                result["ok"] = True
            except Exception as err:
                result["error"] = f"{stage}: {_compiler_message(err)}"
            _emit({"event": "result", "key": key, "result": result})
    return 0


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the worker's entry point
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "--worker":
        print("internal worker of `codegen --check-kernels`", file=sys.stderr)
        return 2
    skip = {arg.split("=", 1)[1] for arg in args[1:] if arg.startswith("--skip=")}
    return _worker([arg for arg in args[1:] if not arg.startswith("--skip=")], skip)


if __name__ == "__main__":
    sys.exit(main())
