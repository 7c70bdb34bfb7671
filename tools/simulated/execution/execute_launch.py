"""`codegen --execute`'s kernel launch: the autotuner's interpreter branch, run once per config on fresh copies of
what the kernel writes, each config's written buffers checked; the first config's values go on into the wrapper."""

# Inductor's CachingAutotuner.run (torch/_inductor/runtime/triton_heuristics.py) launches configs[0] alone in Triton's
# interpreter, with the grid from _interpret_args_grid (GridExpr over the kernel's inductor_meta); torch_npu's
# NPUCachingAutotuner.run does the same with its GridNpu and runtime blocks. Every config is launched through that
# run, one config at a time.

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreted_globals, limit_of
from npu_inductor_compat.tools.simulated.execution.execute_values import copied, difference

WRITTEN_PREFIXES = ("out_ptr", "in_out_ptr")  # how Inductor names the pointers a kernel stores through


@dataclass
class ConfigRun:
    config: str  # the config's kwargs, as text
    status: str  # "match", "mismatch", "error", or "not run" (the kernel reached an interpreter limit)
    against: str = ""  # "eager" (the buffer's FX node) or "config 0" (no eager value for the buffer)
    buffer: str | None = None  # the written buffer that differs
    detail: dict[str, Any] | None = None  # difference() of that buffer, or the error's type and message

    def summary(self) -> dict[str, Any]:
        return {key: value for key, value in vars(self).items() if value not in (None, "")}


@dataclass
class Launch:
    """One kernel launch: the kernel, the buffers it wrote (the names the wrapper binds them to), each config's
    verdict."""

    kernel: str
    written: list[str]
    configs: list[ConfigRun] = field(default_factory=list)  # judged once the graph has run (judge)
    checks: list[Checks] = field(default_factory=list)  # each config's comparisons, until judged
    skipped: int = 0  # configs not run (--max-configs)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        for wanted in ("error", "mismatch", "not run"):
            if any(run.status == wanted for run in self.configs):
                return wanted
        return "match"


@dataclass
class Session:
    """What one graph's compiled run launched, and the eager values its buffers are checked against."""

    # (a buffer's name, its value) -> the eager value of the FX node it holds, or None when there is none of its
    # shape and dtype (a partial reduction, a view's storage, a value made by RNG, a graph input)
    references: Callable[[str, Any], Any]
    fp64: Callable[[str, Any], Any] | None = None  # the same, in fp64 (Inductor's accuracy check), or None
    launches: list[Launch] = field(default_factory=list)
    max_configs: int | None = None  # --max-configs: each kernel's first configs only
    tolerance: float = 1e-3  # Inductor's accuracy check's (execute_reference.tolerance)
    on_launch: Callable[[Launch], None] | None = None


_ACTIVE: dict[int, Session] = {}  # thread id -> the session of the graph that thread is executing


def _param_names(autotuner: Any, count: int) -> list[str]:
    names = list(autotuner.triton_meta.get("signature", {}))
    return names[:count] if len(names) >= count else [*names, *[f"arg{i}" for i in range(len(names), count)]]


def _launching_frame() -> Any:
    """The frame that called the autotuner's run: the wrapper's call(), whose locals name the buffers."""
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _bound_name(frame: Any, value: Any) -> str | None:
    """The wrapper's local name for ``value`` (the buffer a kernel is passed) in the frame that launched it."""
    for name, local in ({} if frame is None else frame.f_locals).items():
        if local is value and not name.startswith("_"):
            return str(name)
    return None


def _launch_every_config(session: Session, autotuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    import torch

    params = _param_names(autotuner, len(args))
    mutated = set(autotuner.inductor_meta.get("mutated_arg_names", ()))
    written = [
        index
        for index, (name, value) in enumerate(zip(params, args, strict=False))
        if isinstance(value, torch.Tensor) and (name.startswith(WRITTEN_PREFIXES) or name in mutated)
    ]
    frame = _launching_frame()
    names = [_bound_name(frame, args[index]) or params[index] for index in written]
    del frame
    name = autotuner.inductor_meta.get("kernel_name") or getattr(autotuner.fn, "__name__", "kernel")
    launch = Launch(kernel=str(name), written=names)
    started = time.perf_counter()
    interpreted_globals(getattr(autotuner.fn, "fn", None))
    before = [copied(args[index]) for index in written]
    configs = list(autotuner.configs)
    if session.max_configs is not None and len(configs) > session.max_configs:
        launch.skipped = len(configs) - session.max_configs
        configs = configs[: session.max_configs]
    first: list[Any] | str = ""
    for number in range(len(configs)):  # config 0 first: the others are compared with it as they run
        for index, saved in zip(written, before, strict=True):
            with torch.no_grad():
                args[index].copy_(saved)
        try:
            with _only(autotuner, configs[number]):
                autotuner.run(*args, **kwargs)
        except Exception as err:
            limit = limit_of(err)
            result: list[Any] | str = f"{type(err).__name__}: {err}" if limit is None else NotRun(limit)
            traceback.clear_frames(err.__traceback__)
        else:
            result = [copied(args[index]) for index in written]
        if number == 0:
            first = result
        launch.checks.append(_checks(session, configs[number], result, first if number else None, names))
    for index, value in zip(written, first if isinstance(first, list) else before, strict=True):
        with torch.no_grad():  # config 0's values go on into the wrapper
            args[index].copy_(value)
    launch.seconds = time.perf_counter() - started
    session.launches.append(launch)
    if session.on_launch is not None:
        session.on_launch(launch)


@contextmanager
def _only(autotuner: Any, config: Any) -> Iterator[None]:
    """The autotuner's own interpreter branch launches ``config``: stock Inductor's and torch_npu's take
    ``configs[0]``; torch_npu's releases with runtime block arguments take the best candidate and its runtime blocks
    (NPUCachingAutotuner._set_best_candidate), which are the config's own (build_candidate_plan)."""
    import sys

    names = tuple(getattr(autotuner, "runtime_block_arg_names", ()) or ())
    kept = {
        key: getattr(autotuner, key)
        for key in ("configs", "best_candidate_config", "best_runtime_blocks")
        if hasattr(autotuner, key)
    }
    autotuner.configs = [config]
    if "best_candidate_config" in kept:
        autotuner.best_candidate_config = config
    if names and "best_runtime_blocks" in kept:
        extract = getattr(sys.modules[type(autotuner).__module__], "extract_runtime_blocks_from_cfg", None)
        blocks = extract(config, names) if extract is not None else config.kwargs
        missing = [name for name in names if name not in blocks]
        if missing:
            raise RuntimeError(f"the config has no value for the runtime block argument(s) {', '.join(missing)}")
        autotuner.best_runtime_blocks = tuple(int(blocks[name]) for name in names)
    try:
        yield
    finally:
        for key, value in kept.items():
            setattr(autotuner, key, value)


class NotRun(str):
    """A config's result when the kernel reached an interpreter limit: the reason."""


NO_VALUE = "no eager value"  # a buffer no FX node's eager value stands for


@dataclass
class Checks:
    """One config's run of a launch, compared as it ran: per written buffer, its difference from the eager value
    (None: agrees; NO_VALUE: there is none) and from config 0's (None for config 0 itself)."""

    config: str
    failed: ConfigRun | None  # an error, or an interpreter limit
    is_first: bool = False
    eager: list[dict[str, Any] | str | None] = field(default_factory=list)
    first: list[dict[str, Any] | None] = field(default_factory=list)


def _checks(
    session: Session, config: Any, result: list[Any] | str, first: list[Any] | str | None, names: list[str]
) -> Checks:
    text = ", ".join(f"{key}={value}" for key, value in config.kwargs.items())
    if isinstance(result, NotRun):
        return Checks(text, ConfigRun(text, "not run", detail={"reason": str(result)}))
    if isinstance(result, str):
        kind, _, message = result.partition(": ")
        return Checks(text, ConfigRun(text, "error", detail={"type": kind, "message": message[:500]}))
    checks = Checks(text, None, is_first=first is None)
    for position, (name, value) in enumerate(zip(names, result, strict=True)):
        expected = session.references(name, value)
        found: dict[str, Any] | str | None = NO_VALUE
        if expected is not None:
            found = difference(expected, value, strides=False)
            if found is not None and _accurate(session, name, expected, value, found):
                found = None
        checks.eager.append(found)
        checks.first.append(None if not isinstance(first, list) else difference(first[position], value, strides=False))
    return checks


def judge(launches: list[Launch]) -> None:
    """Each config's verdict, once the graph has run: a buffer a later launch writes again (a zero fill, then an
    accumulation into it) is held to config 0's values; the last write of a buffer to its eager value, where one
    stands for it, else to config 0's."""
    last: dict[str, int] = {}
    for number, launch in enumerate(launches):
        for name in launch.written:
            last[name] = number
    for number, launch in enumerate(launches):
        launch.configs = [_verdict(checks, launch.written, last, number) for checks in launch.checks]
        launch.checks = []


def _verdict(checks: Checks, names: list[str], last: dict[str, int], number: int) -> ConfigRun:
    if checks.failed is not None:
        return checks.failed
    against = "nothing"  # config 0 with no eager value for any buffer it wrote last
    for position, name in enumerate(names):
        eager = checks.eager[position]
        if last.get(name) == number and eager != NO_VALUE:
            against = "eager"
            if isinstance(eager, dict):
                return ConfigRun(checks.config, "mismatch", "eager", name, eager)
            continue
        first = checks.first[position]
        if first is not None:
            return ConfigRun(checks.config, "mismatch", "config 0", name, first)
        if not checks.is_first and against == "nothing":
            against = "config 0"
    return ConfigRun(checks.config, "match", against)


class EveryConfig:
    """Stands for a kernel's autotuner in the executed wrapper: ``run`` launches every config
    (_launch_every_config) for the session executing in this thread (a wrapper module is loaded once and run at
    each new size); anything else is the autotuner's."""

    def __init__(self, autotuner: Any) -> None:
        self._autotuner = autotuner

    def run(self, *args: Any, **kwargs: Any) -> Any:
        session = _ACTIVE.get(threading.get_ident())
        if session is None:
            return self._autotuner.run(*args, **kwargs)
        return _launch_every_config(session, self._autotuner, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._autotuner, name)


def _accurate(session: Session, name: str, expected: Any, value: Any, found: dict[str, Any]) -> bool:
    """A buffer outside torch.testing's tolerance of its eager value that passes Inductor's accuracy check against
    its fp64 value (eager rounds each op to bf16 where a kernel computes in fp32)."""
    from npu_inductor_compat.tools.simulated.execution.execute_reference import accurate

    if "max_abs" not in found or session.fp64 is None or not value.is_floating_point():
        return False
    reference = session.fp64(name, value)
    return reference is not None and accurate(expected, value, reference, session.tolerance)


def _every_config(original: Any) -> Any:
    @wraps_original(original)
    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        kernel = original(self, kernel_name, source_code, *args, **kwargs)
        if _ACTIVE.get(threading.get_ident()) is None:
            return kernel
        if not getattr(kernel, "triton_interpret", False):
            raise RuntimeError(
                f"kernel {kernel_name} was loaded for a device, not for Triton's interpreter (TRITON_INTERPRET was "
                "off when its module was first loaded in this process)"
            )
        return EveryConfig(kernel)

    return triton


LAUNCH_RECORD = Patch(
    id="execute-every-config",
    layer="capture",
    why="codegen --execute launches each Triton kernel of an executed wrapper with every config its autotuner "
    "holds, one at a time through the autotuner's own interpreter branch, and checks what each wrote",
    upstream="torch._inductor.async_compile.AsyncCompile.triton (its TRITON_INTERPRET branch returns the "
    "autotuner the wrapper launches)",
    remove_when="never: this is the codegen command's execution",
    changes=(Change("torch._inductor.async_compile:AsyncCompile.triton", _every_config),),
)


@contextmanager
def interpreting(session: Session) -> Iterator[None]:
    """Inside, in this thread: the launches of the Triton kernels Inductor loads are recorded in ``session``. They
    are interpreted: the command set TRITON_INTERPRET=1 before Triton loaded (execute_interpreter.turn_on; execute()
    runs nothing when it was not, execute_interpreter.not_ready)."""
    _ACTIVE[threading.get_ident()] = session
    try:
        yield
    finally:
        _ACTIVE.pop(threading.get_ident(), None)
