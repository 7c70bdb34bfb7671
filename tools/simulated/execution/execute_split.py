"""`codegen --execute` on every core: a launch's programs run in forked processes, each a contiguous share of the
grid in the interpreter's order, and their writes merged; any doubt and the launch runs in one process, as Triton's."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

MIN_PROGRAMS = 16  # a smaller grid runs in one process: a fork costs more than a few programs
MAX_WORKERS = 4
# A kernel whose programs may see each other's writes, or whose order shows, keeps one process: atomics (a split
# scan's look-back, a cooperative reduction's semaphores), barriers, prints, inline assembly.
ORDERED = ("atomic_", "debug_barrier", "device_print", "static_print", "inline_asm")

COUNTS = {"split": 0, "ran again": 0}  # launches split and merged; split, then run again in one process
_ORDERED_KERNELS: dict[Any, bool] = {}  # a kernel's Python function -> whether its source names any of ORDERED


class Fallback(Exception):
    """The split launch cannot stand for the sequential one: it runs again in one process."""


def workers() -> int:
    """The processes a launch may use: this process's cores, at most MAX_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def idle_cores() -> int:
    """Cores no other process wants right now: the kernel's count of runnable threads less this process's own (its
    thread pool may still be spinning after a torch op). Where the cores are busy already (pytest-xdist's workers,
    two codegen runs at once) a fork only adds its cost."""
    try:
        with open("/proc/loadavg", encoding="ascii") as figures:  # "0.52 0.61 0.70 RUNNABLE/ALL LAST_PID"
            runnable = int(figures.read().split()[3].split("/")[0])
        own = sum(_running(task) for task in os.listdir("/proc/self/task"))
    except (OSError, ValueError, IndexError):  # not Linux: the cores are taken to be free
        return workers() - 1
    return max(0, workers() - 1 - max(0, runnable - max(own, 1)))


def _running(task: str) -> bool:
    """Whether this process's thread ``task`` is runnable (state R in /proc/self/task/TASK/stat, after the name)."""
    try:
        with open(f"/proc/self/task/{task}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "R"
    except (OSError, IndexError):
        return False


def _ordered(fn: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether the kernel's source, or a device function's it calls (Inductor's scan look-back and grid barrier are
    in triton_helpers), names any of ORDERED; a source that cannot be read counts as ordered."""
    import ast

    from npu_inductor_compat.tools.simulated.execution.execute_speed import device_function, source_tree

    known = _ORDERED_KERNELS.get(fn)
    if known is not None:
        return known
    tree = source_tree(fn)
    known = tree is None or any(word in ast.unparse(tree) for word in ORDERED)
    scope = getattr(fn, "__globals__", {})
    for node in [] if known else ast.walk(tree):
        callee = device_function(node.func, scope) if isinstance(node, ast.Call) else None
        if callee is not None and callee not in seen and _ordered(callee, seen | {fn}):
            known = True
            break
    _ORDERED_KERNELS[fn] = known
    return known


def _storages(values: Iterator[Any]) -> list[tuple[Any, int]]:
    """The distinct storages of the tensors among ``values`` (tuples opened), by address, each with the widest
    element size a tensor on it has."""
    import torch

    found: dict[int, tuple[Any, int]] = {}
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, tuple):
            stack.extend(value)
        elif isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            if storage.nbytes():
                _, size = found.get(storage.data_ptr(), (storage, 1))
                found[storage.data_ptr()] = (storage, max(size, value.element_size()))
        elif hasattr(value, "data_ptr"):
            raise Fallback("an argument the split does not know how to copy")
    return [found[key] for key in sorted(found)]


def _read(storage: Any) -> Any:
    """A copy of the storage's bytes, as a NumPy uint8 array (the simulated device's memory is the host's)."""
    import torch

    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage).cpu().numpy().copy()


def _put(storage: Any, data: Any) -> None:
    """The storage's bytes set to the uint8 array ``data``."""
    import torch

    view = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    view.copy_(torch.from_numpy(data[: view.numel()]))


def _shares(size: int, count: int) -> list[tuple[int, int]]:
    """``size`` split into ``count`` contiguous ranges, as even as can be, in order."""
    base, extra = divmod(size, count)
    ranges, start = [], 0
    for index in range(count):
        stop = start + base + (1 if index < extra else 0)
        ranges.append((start, stop))
        start = stop
    return [(start, stop) for start, stop in ranges if stop > start]


@contextmanager
def _programs(executor: Any, grid: tuple[int, int, int], axis: int, start: int, stop: int) -> Iterator[None]:
    """Inside, ``executor`` runs the programs ``start``..``stop - 1`` of ``axis`` with every inner axis whole: its
    loop walks a smaller grid, and the builder shifts each index and reports the whole grid's sizes (program_id and
    num_programs read grid_idx and grid_dim: runtime/interpreter.py InterpreterBuilder, Triton 3.3 to 3.7)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    own = list(grid)
    own[axis] = stop - start
    saved_grid = executor.grid
    set_idx = builder.set_grid_idx

    def set_grid_idx(x: int, y: int, z: int) -> None:
        index = [x, y, z]
        index[axis] += start
        set_idx(*index)

    executor.grid = tuple(own)
    whole = {
        "set_grid_dim": lambda nx, ny, nz: type(builder).set_grid_dim(builder, *grid),
        "set_grid_idx": set_grid_idx,
    }
    try:
        with shadowing(builder, whole):
            yield
    finally:
        executor.grid = saved_grid


@contextmanager
def shadowing(obj: Any, values: dict[str, Any]) -> Iterator[None]:
    """Inside, ``obj``'s own attributes ``values`` (over its class's methods, or over what it held); after, ``obj``
    as it was: an attribute it held is put back, one it did not is removed."""
    had = vars(obj).copy()
    for name, value in values.items():
        setattr(obj, name, value)
    try:
        yield
    finally:
        for name in values:
            if name in had:
                setattr(obj, name, had[name])
            else:
                vars(obj).pop(name, None)


def _plan(executor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, int, list[Any], int] | None:
    """(grid, axis, storages, processes) for a launch worth splitting on the cores free now, or None."""
    grid = executor.grid
    if callable(grid) or not isinstance(grid, tuple) or not all(isinstance(size, int) for size in grid):
        return None
    grid = tuple(grid) + (1,) * (3 - len(grid))
    if math.prod(grid) < MIN_PROGRAMS or not _shiftable() or _ordered(executor.fn):
        return None
    processes = 1 + idle_cores()
    if processes < 2:
        return None
    # the outermost axis of more than one program: the interpreter's loop walks x, then y, then z, so each share is a
    # stretch of its order, the first share its beginning (the first program to fail is the loop's)
    axis = next(index for index in range(3) if grid[index] > 1)
    try:
        storages = _storages(iter([*args, *kwargs.values()]))
    except Fallback:
        return None
    return grid, axis, storages, processes


def _shiftable() -> bool:
    """Whether this Triton's interpreter sets program ids as _programs shifts them (Triton 3.3 to 3.7 do)."""
    from triton.runtime import interpreter

    builder = getattr(interpreter, "interpreter_builder", None)
    return all(callable(getattr(builder, name, None)) for name in ("set_grid_idx", "set_grid_dim"))


def _split(original: Any) -> Any:
    """GridExecutor.__call__ over shares of the grid at once, leaving memory as the one loop leaves it wherever the
    kernel's programs do not race: a program that reads, without atomics, what another program writes sees the
    other's write here only when both are in one share, while the loop shows it every earlier program's. On the
    device such a kernel has no defined result either; Inductor's use atomics or barriers for it, and never split."""

    @wraps_original(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        plan = _plan(self, args, kwargs)
        if plan is None:
            return original(self, *args, **kwargs)
        grid, axis, storages, processes = plan
        shares = _shares(grid[axis], processes)
        before = [_read(storage) for storage, _ in storages]
        try:
            children = _forked(original, self, args, kwargs, grid, axis, shares[1:], storages)
        except Fallback:
            return original(self, *args, **kwargs)
        try:
            with _programs(self, grid, axis, *shares[0]):
                original(self, *args, **kwargs)
        except BaseException:
            _reap(children)
            raise  # the first program to fail is in the first share: the sequential loop fails there too
        if _merged(storages, before, _collected(children)):
            COUNTS["split"] += 1
            return None
        COUNTS["ran again"] += 1
        # a share failed, or two shares wrote an element differently: the rest again, here, as Triton runs it
        for (storage, _), saved in zip(storages, before, strict=True):
            _put(storage, saved)
        return original(self, *args, **kwargs)

    return __call__


def _forked(
    original: Any,
    executor: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    grid: tuple[int, int, int],
    axis: int,
    shares: list[tuple[int, int]],
    storages: list[tuple[Any, int]],
) -> list[tuple[int, Any]]:
    """One forked process a share, each running its programs and leaving its storages' bytes in shared memory."""
    import mmap

    total = sum(storage.nbytes() for storage, _ in storages)
    sys.stdout.flush()
    sys.stderr.flush()
    children: list[tuple[int, Any]] = []
    for start, stop in shares:
        try:
            shared = mmap.mmap(-1, max(total, 1))
            pid = os.fork()
        except OSError as err:  # no memory or no process to spare: one process runs the launch
            _reap(children)
            raise Fallback(str(err)) from err
        if pid == 0:  # the child: never returns
            code = 1
            try:
                import torch

                torch.set_num_threads(1)  # the parent's thread pool does not survive a fork
                with _programs(executor, grid, axis, start, stop):
                    original(executor, *args, **kwargs)
                _write(shared, storages)
                code = 0
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        children.append((pid, shared))
    return children


def _write(shared: Any, storages: list[tuple[Any, int]]) -> None:
    import numpy as np

    into = np.frombuffer(shared, dtype=np.uint8)
    offset = 0
    for storage, _ in storages:
        data = _read(storage)
        into[offset : offset + data.size] = data
        offset += data.size


def _reap(children: list[tuple[int, Any]]) -> None:
    import signal

    for pid, shared in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        shared.close()


def _collected(children: list[tuple[int, Any]]) -> list[Any] | None:
    """Each child's storages' bytes after its share, or None when one of them did not finish cleanly."""
    import numpy as np

    results: list[Any] | None = []
    for pid, shared in children:
        _, status = os.waitpid(pid, 0)
        if results is not None and os.waitstatus_to_exitcode(status) == 0:
            results.append(np.frombuffer(shared, dtype=np.uint8).copy())
        else:
            results = None
        shared.close()
    return results


def _merged(storages: list[tuple[Any, int]], before: list[Any], results: list[Any] | None) -> bool:
    """The children's writes put into this process's storages; False when they could not be (a child failed, or
    two processes changed one element to different values: which the sequential loop wrote last is not known)."""
    import numpy as np

    if results is None:
        return False
    merged, offset = [], 0  # a storage's bytes start at offset in each child's results, as _write put them
    for (storage, size), saved in zip(storages, before, strict=True):
        value = _elements(_read(storage), size)
        start = _elements(saved, size)
        written = (value != start).any(axis=1)
        for flat in results:
            theirs = _elements(flat[offset : offset + saved.size], size)
            changed = (theirs != start).any(axis=1)
            both = written & changed
            if both.any() and not np.array_equal(value[both], theirs[both]):
                return False
            value[changed] = theirs[changed]
            written |= changed
        merged.append(value)
        offset += saved.size
    for (storage, _), value in zip(storages, merged, strict=True):
        _put(storage, value.reshape(-1))
    return True


def _elements(data: Any, size: int) -> Any:
    """uint8 ``data`` as rows of ``size`` bytes (zero-padded to a whole row): one row an element."""
    import numpy as np

    if data.size % size:
        data = np.concatenate([data, np.zeros(size - data.size % size, dtype=np.uint8)])
    return data.reshape(-1, size)


SPLIT_RECORD = Patch(
    id="execute-grid-split",
    layer="capture",
    why="Triton's interpreter runs a launch's programs one after another in one process; on a machine of several "
    "cores the programs of a large grid run in forked processes, a contiguous share each, and their writes are "
    "merged, or the launch runs again in one process where the merge cannot stand for the loop",
    upstream="triton.runtime.interpreter (GridExecutor.__call__, InterpreterBuilder.set_grid_idx)",
    remove_when="Triton's interpreter runs a grid's programs in parallel itself",
    changes=(Change("triton.runtime.interpreter:GridExecutor.__call__", _split),),
)

__all__ = ["SPLIT_RECORD", "shadowing"]
