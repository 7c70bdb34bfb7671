"""``codegen --check-kernels``: every generated Triton kernel, per autotune config, through triton-ascend's compiler.

triton-ascend's wheel carries its compiler front end (libtriton and ``triton-adapter-opt``); only the last stage,
npubin (CANN's ``bishengir-compile``), needs the CANN toolkit. So each config goes AST -> TTIR (the Python code
generator), TTIR passes (libtriton, in process), then TTIR -> linalg (``triton-adapter-opt``, a subprocess), and
stops before npubin. The stage reached and, on failure, the compiler's own message go into summary.json.

triton-ascend owns the top-level ``triton`` package, like torch's own ``triton``: the two cannot share an
environment. It is therefore used from its own directory, put first on the path of a worker process only: the
directory named by $NPU_INDUCTOR_COMPAT_TRITON_ASCEND, this environment's ``triton`` when that is triton-ascend, or
else the PyPI wheel installed (``pip install --target``, never into this environment) once into the cache.
The user's ``triton`` is never touched.

Without CANN there is no active Triton driver, so the kernel module's ``set_driver_to_gpu()`` is made inert, and
Inductor's ``libdevice`` (empty stubs on triton-ascend) is bound to ``tl.extra.ascend.libdevice``, as torch_npu's
own ``npu_triton_helpers`` binds it for every kernel an Ascend run compiles. A worker that dies inside the compiler
(an assertion in ``triton-adapter-opt`` aborts only that subprocess; libtriton aborts the worker) costs only the
config it was lowering: the others are lowered by a fresh worker.

torch_npu's kernels (the ``torch_npu-wheel`` provider) load only where torch_npu's ``_inductor`` does: their module
imports ``torch_npu._inductor.runtime`` (its heuristics and helpers). A worker given a torch_npu release therefore
first hosts the same deep stand-in the codegen process runs (:func:`torch_npu_environment`: ``torch_npu`` whose
``__path__`` is the unpacked wheel, the stub table's native stubs, torch_npu's backend loaded), over triton-ascend:
there torch_npu's ``triton`` is triton-ascend, so the stub table's triton-ascend entries are dropped (the real
modules answer) and the few names torch_npu reaches in triton-ascend releases newer than the installed one are
given by :data:`BRIDGES`, each named, reported and modelled on the real source. Two workers use it:

- ``--check-kernels``: each config of a torch_npu kernel goes through torch_npu's own precompile
  (``NPUCachingAutotuner._precompile_config``: its source, constants, target and triton-ascend options, as it
  compiles each config on an NPU) up to its ``triton.compile`` call, and from there through what triton-ascend's
  ``triton.compile`` runs, to linalg, as stock kernels do.
- torch_npu's TTIR check (:class:`TtirCheckWorker`): torch_npu's scheduling compiles each "linear" kernel to TTIR
  before defining it (``NPUTritonScheduling.make_ttir_for_check``) and falls back to its "no_linear" kernel when
  that raises. The codegen process cannot run it (its ``triton`` is torch's), so it sends each kernel's source to
  one persistent worker that runs torch_npu's own ``make_ttir_for_check`` there, and answers passed, or the
  compiler's error (torch_npu_wheel.py's ``torch-npu-wheel-ttir-check`` record).
"""

from __future__ import annotations

import ast
import collections
import contextlib
import importlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.targets import Target

SITE_ENV = "NPU_INDUCTOR_COMPAT_TRITON_ASCEND"
TRITON_ASCEND = "3.2.0"  # the release on PyPI (its only one)
TARGET_ARCH = "Ascend910B3"  # read only by npubin, which is not run
STAGES = ("ttir", "ttir-passes", "linalg")  # what each config goes through, in order
LIBDEVICE = "tl.extra.ascend.libdevice (torch_npu's npu_triton_helpers binding)"
# torch_npu's kernels: their own imports bind libdevice (torch_npu/_inductor/runtime/triton_helpers.py)
TORCH_NPU_LIBDEVICE = "torch_npu's triton_helpers binding (tl.extra.cann.libdevice, else tl.extra.ascend.libdevice)"
TORCH_NPU_TTIR = (
    "torch_npu's NPUCachingAutotuner._precompile_config (its source, target and options, as on an NPU), up to "
    "triton.compile"
)


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
    from npu_inductor_compat.tools import wheel_cache

    root = wheel_cache.default_cache_dir().parent / "triton_ascend" / TRITON_ASCEND
    if _is_triton_ascend(root):
        return TritonAscend(root, _version_in(root), f"triton-ascend {TRITON_ASCEND} wheel ({root})")
    print(
        f"installing triton-ascend {TRITON_ASCEND} (about 55 MB, with pybind11) into {root}, once; the environment's "
        "triton is not touched",
        file=sys.stderr,
    )
    partial = root.with_name(root.name + ".partial")
    command = [*wheel_cache._pip(), "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"]
    command += [str(partial), f"triton-ascend=={TRITON_ASCEND}", "pybind11"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired, wheel_cache.SurveyError) as err:
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


def _worker_env(triton_ascend: TritonAscend) -> dict[str, str]:
    env = dict(os.environ)
    if triton_ascend.site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_ascend.site), env.get("PYTHONPATH")]))
    return env


def lower(
    files: list[Path],
    triton_ascend: TritonAscend,
    timeout: float = 900,
    torch_npu: str | None = None,
    environment: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One result per (kernel file, config): ``file``, ``config``, ``stage`` reached (None, or one of STAGES),
    ``ok`` (reached linalg), ``error`` (the compiler's message), ``seconds`` per stage. ``torch_npu``: the release
    whose kernels they are (loaded in :func:`torch_npu_environment`; what it unstubbed and bridged goes into
    ``environment``)."""
    env = _worker_env(triton_ascend)
    with tempfile.TemporaryDirectory(prefix="npu_kernel_check_cache_") as cache:
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", cache)  # what the worker's Inductor writes goes with it
        return _lower(files, env, timeout, torch_npu, environment)


def _lower(
    files: list[Path], env: dict[str, str], timeout: float, torch_npu: str | None, environment: dict[str, Any] | None
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    done_keys: list[str] = []
    while True:
        command = [sys.executable, "-m", "npu_inductor_compat.tools.simulated.kernel_check", "--worker"]
        command += [f"--torch-npu={torch_npu}"] if torch_npu else []
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
            elif event.get("event") == "environment" and environment is not None:
                environment.update({key: value for key, value in event.items() if key != "event"})
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
    # the torch_npu-wheel provider's kernels load in torch_npu's environment, in its release
    torch_npu = (summary.get("torch_npu_standin") or {}).get("wheel", {}).get("torch_npu")
    environment: dict[str, Any] = {}
    if files:
        print(
            f"lowering {len(files)} Triton kernel(s), every autotune config, through triton-ascend "
            f"{triton_ascend.version}'s front end (TTIR, then linalg; a few seconds per config) ...",
            file=sys.stderr,
            flush=True,
        )
    start = time.perf_counter()
    paths = [path for _, _, path in files]
    results = lower(paths, triton_ascend, torch_npu=torch_npu, environment=environment) if files else []
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
    every, some = rejected_kernels(summary["graphs"])
    summary["kernel_check"] = {
        "every_config_rejected": every,
        "some_configs_rejected": some,
        "triton_ascend": triton_ascend.version,
        "source": triton_ascend.source,
        "stages": list(STAGES),
        "libdevice": LIBDEVICE if torch_npu is None else TORCH_NPU_LIBDEVICE,
        **({} if torch_npu is None else {"torch_npu": torch_npu, "ttir": TORCH_NPU_TTIR, **environment}),
        "configs": len(results),
        "rejected": rejected,
        "seconds": round(time.perf_counter() - start, 1),
        "error": "\n".join(result["error"] for result in orphans) or None,
    }
    return rejected


def rejected_kernels(graphs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(kernels with every config rejected: they cannot compile at all, kernels with only some configs rejected:
    the autotuner loses choices), each as "graph N: name", from the per-graph kernel_check results."""
    every: list[str] = []
    some: list[str] = []
    for graph in graphs:
        for name, results in (graph.get("kernel_check") or {}).items():
            failed = [result for result in results if not result["ok"]]
            if failed:
                (every if len(failed) == len(results) else some).append(f"graph {graph['index']}: {name}")
    return every, some


def verdict(check: dict[str, Any]) -> str:
    """One clause for the run's last lines: every config lowered, or which kernels cannot compile at all apart from
    those that only lose configs."""
    if not check.get("rejected"):
        return "every kernel config lowered" if check.get("configs") else "no Triton kernel to lower"
    every, some = check.get("every_config_rejected", []), check.get("some_configs_rejected", [])
    parts = [f"{check['rejected']} config(s) rejected"]
    if every:
        parts.append(
            f"{len(every)} kernel(s) with every config rejected, which cannot compile at all ({', '.join(every)})"
        )
    if some:
        parts.append(f"{len(some)} kernel(s) with some configs rejected")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- worker
_channel: Any = None  # a worker's answers: stdout, or the channel _protocol_channel set aside


def _emit(event: dict[str, Any]) -> None:
    out = _channel or sys.stdout
    out.write(json.dumps(event, default=str) + "\n")
    out.flush()


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


# ---------------------------------------------------------------------------------------------- torch_npu's environment
@dataclass(frozen=True)
class Bridge:
    """A name torch_npu's code reaches in triton-ascend releases newer than the installed one, given to it in a
    worker only where the installed triton-ascend lacks it and the torch_npu release reaches it. Like
    torch_npu_wheel.py's stub table: who reaches it and why, what the bridge gives, and the real source it stands
    for; each worker reports the bridges it installed."""

    name: str  # "module:attribute", as torch_npu's code reaches it
    why: str
    returns: str
    source: str
    needed: Callable[[Path], bool]  # given the wheel's torch_npu/ once torch_npu's backend is loaded
    install: Callable[[], None]


TRITON_HELPERS = torch_npu_names.module_of("runtime-triton-helpers")
ASCEND_IR_PARENT = "triton._C.libtriton.ascend"


class _AbsentExtension(types.ModuleType):
    """``tl.extra.cann.extension`` where the installed triton-ascend has none: every op is absent, and a kernel that
    names one gets the code generator's compile error saying so."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name, name=name)
        import triton

        raise AttributeError(
            f"triton-ascend {triton.__version__} has no tl.extra.cann.extension.{name}: the Ascend extension ops "
            "(gather_out_to_ub, index_put, scatter_ub_to_out, custom, ...) came with later triton-ascend releases",
            name=name,
        )


def _helpers_lack_extension(_package: Path) -> bool:
    try:
        helpers = importlib.import_module(TRITON_HELPERS)
    except ModuleNotFoundError:  # a release keeping its helpers elsewhere: nothing to bridge there
        return False
    return not hasattr(helpers, "extension")


def _bind_absent_extension() -> None:
    module = _AbsentExtension("triton.language.extra.cann.extension", _AbsentExtension.__doc__)
    helpers: Any = importlib.import_module(TRITON_HELPERS)
    helpers.extension = module


def _ascend_ir_missing(package: Path) -> bool:
    """libtriton.ascend has no ``ir`` and torch_npu's code imports it (2.12's precompile does not)."""
    if hasattr(importlib.import_module(ASCEND_IR_PARENT), "ir"):
        return False
    return any(
        f"from {ASCEND_IR_PARENT} import ir" in path.read_text(errors="replace")
        for path in (package / "_inductor").rglob("*.py")
    )


def _bind_ascend_ir() -> None:
    import triton

    def load_dialects(context: Any) -> None:
        """triton-ascend 3.2.0 has no Ascend dialect to load (AscendBackend.load_dialects does nothing)."""

    module = types.ModuleType(f"{ASCEND_IR_PARENT}.ir", f"bridge: triton-ascend {triton.__version__} has no ascend.ir")
    module.load_dialects = load_dialects  # type: ignore[attr-defined]
    parent: Any = importlib.import_module(ASCEND_IR_PARENT)
    parent.ir = module


BRIDGES: tuple[Bridge, ...] = (
    Bridge(
        f"{TRITON_HELPERS}:extension",
        "every kernel torch_npu generates imports `extension` (with libdevice) from its triton_helpers, which binds "
        "both from tl.extra.cann (later triton-ascend releases' name for the `ascend` extra; 3.2.0 has only "
        "tl.extra.ascend) and, failing that, binds only libdevice (tl.extra.ascend.libdevice, the real one): "
        "unbridged, every kernel fails to import (cannot import name 'extension')",
        "a module with no ops: torch_npu's own fallback binding of libdevice stands; a kernel calling an extension "
        "op (indirect indexing: gather_out_to_ub, index_put, scatter_ub_to_out, custom) fails to compile, naming "
        "the op",
        "triton-ascend third_party/ascend/language/cann/__init__.py (tl.extra.cann: libdevice, extension) and "
        "cann/extension/__init__.py (the ops); torch_npu _inductor/runtime/triton_helpers.py (the binding)",
        _helpers_lack_extension,
        _bind_absent_extension,
    ),
    Bridge(
        f"{ASCEND_IR_PARENT}:ir",
        "torch_npu's TTIR compile (runtime/triton_heuristics.py _make_ttir_module_from_cfg, which make_ttir_for_check "
        "runs) calls `from triton._C.libtriton.ascend import ir as ascend_ir; ascend_ir.load_dialects(context)` "
        "before ast_to_ttir; triton-ascend 3.2.0's libtriton.ascend has no `ir`",
        "a module whose load_dialects(context) does nothing, as 3.2.0's own AscendBackend.load_dialects "
        "(triton/backends/ascend/compiler.py): 3.2.0 has no TritonAscend dialect, its TTIR is triton's dialects, "
        "loaded by libtriton's ir.load_dialects",
        "triton-ascend third_party/ascend/triton_ascend.cc (the libtriton.ascend.ir submodule: the TritonAscend "
        "dialect's builder methods and load_dialects)",
        _ascend_ir_missing,
        _bind_ascend_ir,
    ),
)


def _real_in_triton_ascend(module: str) -> bool:
    """Whether a stubbed module is triton-ascend's and exists for real here (then the stub must not shadow it)."""
    import importlib.util

    return module.partition(".")[0] == "triton" and importlib.util.find_spec(module) is not None


@contextlib.contextmanager
def torch_npu_environment(release: str) -> Iterator[dict[str, Any]]:
    """In a worker whose ``triton`` is triton-ascend: torch_npu ``release``'s deep stand-in with its backend loaded,
    as the codegen process has it (torch_npu_wheel.py ``wheel_run``: the wheel's ``_inductor`` behind the stand-in,
    the stub table's native stubs, the simulated device), except that the stub table's triton-ascend entries whose
    real module exists are dropped, and :data:`BRIDGES` installed where needed. Yields what it did: ``torch_npu``,
    ``triton_ascend`` (versions), ``unstubbed`` and ``bridges`` (names)."""
    import triton

    from npu_inductor_compat.tools.simulated import torch_npu_wheel

    if not _is_triton_ascend(Path(triton.__file__).parent.parent):
        raise RuntimeError(f"this worker's triton ({triton.__file__}) is not triton-ascend")
    unstubbed = [stub.name for stub in torch_npu_wheel.STUBS if _real_in_triton_ascend(stub.module)]
    # the worker is a process of its own: the table it runs with is the codegen process's, less those entries
    torch_npu_wheel.STUBS = tuple(stub for stub in torch_npu_wheel.STUBS if stub.name not in unstubbed)
    with torch_npu_wheel.wheel_run(release) as (use, _provider, _events):
        bridged = []
        for bridge in BRIDGES:
            if bridge.needed(use.wheel.tree.package):
                bridge.install()
                bridged.append(bridge.name)
        yield {
            "torch_npu": use.wheel.tree.version,
            "triton_ascend": str(triton.__version__),
            "unstubbed": unstubbed,
            "bridges": bridged,
            "missing_stubs": use.wheel.missing,  # live: filled while kernels load
        }


def _protocol_channel() -> Any:
    """The worker's answers go to the original stdout; anything else printed (torch_npu's code, the compiler, even
    from C) goes to stderr, so it can never be read as an answer."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


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


def _worker(files: list[str], skip: set[str], torch_npu: str | None = None) -> int:  # pragma: no cover
    """Lower every config of ``files`` (runs under triton-ascend); ``torch_npu``: the release whose kernels they
    are (they load in :func:`torch_npu_environment`)."""
    global _channel
    import importlib.util

    import triton.language as tl
    from torch._inductor.runtime import triton_helpers
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    _channel = _protocol_channel()
    stack = contextlib.ExitStack()
    if torch_npu is None:
        triton_helpers.set_driver_to_gpu = lambda: None  # no driver without CANN; nothing is launched
        triton_helpers.libdevice = tl.extra.ascend.libdevice  # as torch_npu's npu_triton_helpers binds it
    else:
        try:
            environment = stack.enter_context(torch_npu_environment(torch_npu))
        except Exception as err:
            message = f"torch_npu {torch_npu}'s environment failed to load: {_compiler_message(err)}"
            print(traceback.format_exc(), file=sys.stderr)
            _emit({"event": "result", "key": "::environment", "result": _failure(None, message)})
            return 1
        _emit({"event": "environment", **{key: environment[key] for key in ("torch_npu", "unstubbed", "bridges")}})
        _stop_at_triton_compile()
    target = GPUTarget("npu", TARGET_ARCH, 0)
    backend = make_backend(target)
    modules = tempfile.mkdtemp(prefix="npu_kernel_check_")
    stack.callback(shutil.rmtree, modules, True)
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
                message = f"loading the kernel failed: {_compiler_message(err)}"
                _emit({"event": "result", "key": key, "result": _failure(file, message)})
            continue
        fn = getattr(autotuner, "fn", autotuner)
        triton_meta = dict(getattr(autotuner, "triton_meta", None) or {})
        configs = list(getattr(autotuner, "configs", None) or []) or [
            types.SimpleNamespace(kwargs={}, num_warps=4, num_stages=1)
        ]
        for number, config in enumerate(configs):
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
            stage = STAGES[0]
            _emit({"event": "start", "key": key, "file": file, "kernel": name, "config": kwargs, "stage": stage})
            try:
                began = time.perf_counter()
                if torch_npu is None:
                    ir_module, options = _stock_ttir(backend, fn, triton_meta, config)
                    config_backend = backend
                else:
                    ir_module, config_backend, options = _torch_npu_ttir(autotuner, config)
                result["seconds"][stage], result["stage"] = round(time.perf_counter() - began, 3), stage
                metadata = {"hash": key, "target": config_backend.target, **options.__dict__}
                stages: dict[str, Any] = {}
                config_backend.add_stages(stages, options)
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
    stack.close()
    return 0


def _failure(file: str | None, message: str) -> dict[str, Any]:
    return {"file": file, "config": None, "stage": None, "ok": False, "error": message, "seconds": {}}


# ---------------------------------------------------------------------------------------------- torch_npu's TTIR check
TTIR_WORKER = "--ttir-check-worker"
START_TIMEOUT = 900.0  # the first start may build the simulated device; later ones take ~15 s
CHECK_TIMEOUT = 600.0  # one kernel's check takes well under a second


def _resolve_method(target: str) -> tuple[Any, Callable[..., Any]]:
    """``"module:Class.method"`` -> (an instance of Class made without running its ``__init__``, the function).
    torch_npu's ``make_ttir_for_check`` reads nothing of its ``self`` (a scheduling, which needs a scheduler)."""
    owner, method = Target.parse(target).owner()
    return owner.__new__(owner), getattr(owner, method)


def _check_message(error: BaseException) -> str:
    """The check's error in the compiler's words: torch_npu's NoTritonConfigsError carries the compiler's message,
    then the worker's stack trace (kept apart, as the check's traceback)."""
    return f"{type(error).__name__}: {str(error).split(chr(10) + 'Stack trace:', 1)[0].strip()}"


def _ttir_worker(release: str, target: str) -> int:  # pragma: no cover - runs under triton-ascend
    """The worker end: torch_npu ``release``'s environment, then one JSON request a line on stdin (``id``,
    ``source``: the kernel source torch_npu's scheduling passed to its check), one answer each: ``ok``, ``error``,
    ``traceback``, ``worker_error`` (the failure is this tool's, e.g. a missing stub, not the compiler's)."""
    global _channel
    from npu_inductor_compat.tools.simulated.standin import NotSimulatedError

    _channel = _protocol_channel()
    began = time.perf_counter()
    try:
        with torch_npu_environment(release) as environment:
            instance, check = _resolve_method(target)
            ready = {key: value for key, value in environment.items() if key != "missing_stubs"}
            _emit({"event": "ready", "seconds": round(time.perf_counter() - began, 1), **ready})
            while line := sys.stdin.readline():
                request = json.loads(line)
                answer: dict[str, Any] = {"event": "checked", "id": request["id"], "ok": True, "error": None}
                began = time.perf_counter()
                try:
                    check(instance, request["source"])
                except Exception as err:
                    answer.update(ok=False, error=_check_message(err), traceback=_tail(traceback.format_exc(), 80))
                    answer["worker_error"] = isinstance(err, NotSimulatedError)
                answer["seconds"] = round(time.perf_counter() - began, 3)
                answer["missing_stubs"] = list(environment["missing_stubs"])
                _emit(answer)
    except Exception as err:
        print(traceback.format_exc(), file=sys.stderr)
        _emit({"event": "failed", "error": f"{type(err).__name__}: {err}"})
        return 1
    return 0


class TtirCheckWorker:
    """The codegen process's end of torch_npu's TTIR check: ``check(source)`` sends a kernel's source to a worker
    process that runs torch_npu's own check on it over triton-ascend (:func:`_ttir_worker`), and answers.

    What runs is torch_npu's code, from the wheel: ``NPUTritonScheduling.make_ttir_for_check``
    (_inductor/codegen/scheduling.py: the kernel named ``triton_``, loaded by Inductor's PyCodeCache) calls its
    autotuner's ``_triton_make_ttir`` (_inductor/runtime/triton_heuristics.py: one config, chosen by
    ``_select_ttir_test_config``), whose ``_make_ttir_module_from_cfg`` builds torch_npu's ASTSource and
    triton-ascend options and calls triton-ascend's ``ast_to_ttir`` (triton/compiler/code_generator.py). "failed" is
    what that raised (torch_npu's NoTritonConfigsError with the compiler's message), as on an NPU host.

    One worker serves the whole run: started at the first check (it loads torch, torch_npu's backend and
    triton-ascend, about 15 s), kept for every later kernel, stopped by :meth:`close` (and at exit; a worker whose
    codegen process is gone stops at the end of its input). A worker that dies or hangs inside a check costs that
    check (an ``error`` naming how it ended, with its stderr's tail) and is started afresh for the next; one that
    cannot start makes every check an ``error`` saying why. Never a silent pass."""

    def __init__(self, release: str, target: str, start_timeout: float = START_TIMEOUT) -> None:
        self.release = release  # the torch_npu release the codegen process runs
        self.target = target  # "module:Class.method" of torch_npu's check
        self.start_timeout = start_timeout
        self.check_timeout = CHECK_TIMEOUT
        self.info: dict[str, Any] = {
            "runs": f"{target} (torch_npu {release}'s own), in a worker process over triton-ascend",
            "triton_ascend": None,
            "source": None,
            "unstubbed": [],
            "bridges": [],
            "starts": 0,
            "start_seconds": [],
            "missing_stubs": [],
            "error": None,
        }
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._threads: list[threading.Thread] = []
        self._cache: str | None = None
        self._unavailable: str | None = None
        self._requests = 0
        import atexit

        atexit.register(self.close)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            info: dict[str, Any] = json.loads(json.dumps(self.info))  # a copy
        return info

    def check(self, source: str) -> dict[str, Any]:
        """``result``: "passed", "failed" (``error``: the compiler's, ``traceback``: the worker's) or "error" (the
        check could not run: ``error`` says why); ``seconds``."""
        with self._lock:
            if self._unavailable is None and self._process is None:
                try:
                    self._start()
                except (KernelCheckUnavailable, OSError, RuntimeError) as err:
                    self._unavailable = self.info["error"] = f"the TTIR-check worker could not start: {err}"
                    self._stop()
            if self._unavailable is not None:
                return {"result": "error", "error": self._unavailable, "seconds": 0.0}
            assert self._process is not None and self._process.stdin is not None
            self._requests += 1
            began = time.perf_counter()
            try:
                self._process.stdin.write(json.dumps({"id": self._requests, "source": source}) + "\n")
                self._process.stdin.flush()
                answer = self._answer(self.check_timeout)
            except (OSError, ValueError):  # its end of the pipe is closed: it died
                answer = None
            if answer is None or answer.get("event") != "checked" or answer.get("id") != self._requests:
                message = self._ended("while checking this kernel", answer)
                self._stop()  # the next check starts a fresh worker
                return {"result": "error", "error": message, "seconds": round(time.perf_counter() - began, 3)}
            for name in answer.get("missing_stubs", []):
                if name not in self.info["missing_stubs"]:
                    self.info["missing_stubs"].append(name)
            if answer["ok"]:
                return {"result": "passed", "error": None, "seconds": answer["seconds"]}
            return {
                "result": "error" if answer.get("worker_error") else "failed",
                "error": answer["error"],
                "traceback": answer.get("traceback"),
                "seconds": answer["seconds"],
            }

    def close(self) -> None:
        """Stop the worker (a later check starts a new one)."""
        with self._lock:
            self._stop()

    # -------------------------------------------------------------------------------------------- the process
    def _start(self) -> None:
        triton_ascend = locate()
        self.info["triton_ascend"], self.info["source"] = triton_ascend.version, triton_ascend.source
        env = _worker_env(triton_ascend)
        self._cache = tempfile.mkdtemp(prefix="npu_ttir_check_")
        env["TORCHINDUCTOR_CACHE_DIR"] = self._cache  # PyCodeCache.load writes each checked kernel there
        command = [sys.executable, "-m", "npu_inductor_compat.tools.simulated.kernel_check", TTIR_WORKER]
        self._answers, self._stderr = queue.Queue(), collections.deque(maxlen=200)
        began = time.perf_counter()
        self._process = subprocess.Popen(
            [*command, self.release, self.target],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.info["starts"] += 1
        self._threads = [
            threading.Thread(target=_read_answers, args=(self._process.stdout, self._answers), daemon=True),
            threading.Thread(target=_read_lines, args=(self._process.stderr, self._stderr), daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        ready = self._answer(self.start_timeout)
        if ready is None or ready.get("event") != "ready":
            raise RuntimeError(self._ended("while loading torch_npu over triton-ascend", ready))
        self.info["start_seconds"].append(round(time.perf_counter() - began, 1))
        self.info["unstubbed"], self.info["bridges"] = ready["unstubbed"], ready["bridges"]

    def _answer(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next answer; None when its output ended; {"event": "timeout"} when none came in time."""
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            return {"event": "timeout", "seconds": timeout}

    def _ended(self, when: str, answer: dict[str, Any] | None) -> str:
        """Why the worker gave no answer, with the tail of what it printed."""
        process = self._process
        if answer is not None and answer.get("event") == "failed":
            how = f"failed {when}: {answer['error']}"
        elif answer is not None and answer.get("event") == "timeout":
            how = f"gave no answer in {answer['seconds']:.0f} s {when} (stopped)"
        else:
            code = None
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = process.wait(timeout=10)
            how = f"died ({_exit_text(code)}) {when}" if code is not None else f"stopped answering {when}"
        for thread in self._threads[1:]:
            thread.join(timeout=2)  # the rest of its stderr
        return f"the TTIR-check worker {how}:\n{_tail(chr(10).join(self._stderr))}"

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.close()  # type: ignore[union-attr]  # the worker ends at the end of its input
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for thread in self._threads:
                thread.join(timeout=5)
        self._threads = []
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None


def _read_answers(stream: Any, answers: queue.Queue[dict[str, Any] | None]) -> None:
    for line in stream:
        with contextlib.suppress(ValueError):
            answers.put(json.loads(line))
    answers.put(None)


def _read_lines(stream: Any, lines: collections.deque[str]) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the worker's entry point
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == TTIR_WORKER:
        return _ttir_worker(args[1], args[2])
    if not args or args[0] != "--worker":
        print("internal worker of `codegen --check-kernels` and of torch_npu's TTIR check", file=sys.stderr)
        return 2
    options = {arg.partition("=")[0]: arg.partition("=")[2] for arg in args[1:] if arg.startswith("--")}
    skip = {arg.split("=", 1)[1] for arg in args[1:] if arg.startswith("--skip=")}
    files = [arg for arg in args[1:] if not arg.startswith("--")]
    return _worker(files, skip, options.get("--torch-npu") or None)


if __name__ == "__main__":
    sys.exit(main())
