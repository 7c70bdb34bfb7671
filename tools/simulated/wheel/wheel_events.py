"""What torch_npu's codegen did per kernel under the torch_npu-wheel provider (its silent fallbacks and its TTIR
checks), and the replacements of torch_npu's functions that record it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.patching import wraps_original
from npu_inductor_compat.tools.simulated.wheel.wheel_targets import COMBINED_SCHEDULING

__all__ = [
    "EVENTS",
    "Events",
    "TemplatePrecompileFailed",
    "TtirCheckFailed",
    "counting_repeated_log_lines",
    "observing_linear_fallback",
    "replacing_template_precompile",
    "replacing_ttir_check",
]


@dataclass
class Events:
    """What torch_npu's codegen did, per kernel: every fallback it took from its main path (and the error it
    swallowed), and every check it ran on a kernel, with its result: "passed", "failed" (the compiler's error) or
    "error" (the check could not run). ``ttir_worker`` ran torch_npu's TTIR checks, in a triton-ascend process."""

    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    ttir_worker: Any = None  # ttir_check.TtirCheckWorker, once the TTIR-check or precompile record is applied
    precompiles: list[dict[str, Any]] = field(default_factory=list)  # template choices compiled, in order
    # Inductor options torch_npu's loading changed: key -> {"before", "after"[, "codegen": what codegen uses]}
    config_changes: dict[str, dict[str, str]] = field(default_factory=dict)
    # torch_npu's log records below ERROR, per place that logs them ("file:line"): level, count, the first message
    log_places: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pending: threading.local = field(default_factory=threading.local)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            found = {
                "fallbacks": list(self.fallbacks),
                "checks": list(self.checks),
                "precompiles": list(self.precompiles),
                "config_changes": dict(self.config_changes),
                "log": [{"where": where, **place} for where, place in self.log_places.items()],
            }
        if self.ttir_worker is not None:  # how the checks ran: the worker, its triton-ascend, what it bridged
            found["ttir_check"] = self.ttir_worker.describe()
        return found

    def first_from_its_place(self, record: Any) -> bool:
        """Count a torch_npu log record below ERROR by the place that logged it; True the first time (it is shown),
        False for a repeat (it is counted, not shown)."""
        where = f"{record.pathname.rpartition('torch_npu/')[2] or record.pathname}:{record.lineno}"
        with self._lock:
            place = self.log_places.get(where)
            if place is None:
                self.log_places[where] = {"level": record.levelname, "count": 1, "first": record.getMessage()[:300]}
                return True
            place["count"] += 1
            return False

    def by_kernel(self) -> dict[str, list[str]]:
        """kernel name -> what happened to it (its checks, then any fallback), in order."""
        found: dict[str, list[str]] = {}
        with self._lock:
            for event in self.checks:
                outcome = event["result"] if event["error"] is None else f"{event['result']}: {event['error']}"
                for kernel in event["kernels"] or ["(kernel unknown)"]:
                    found.setdefault(kernel, []).append(f"check {event['check']}: {outcome}")
            for event in self.fallbacks:
                for kernel in event["kernels"]:
                    found.setdefault(kernel, []).append(f"fallback {event['fallback']}: {event['error']}")
        return found


EVENTS = Events()


def _new_kernels(before: set[str]) -> list[str]:
    from torch._inductor.virtualized import V

    names = getattr(getattr(V.graph, "wrapper_code", None), "src_to_kernel", {}).values()
    return [name for name in names if name not in before]


def _kernel_names() -> set[str]:
    from torch._inductor.virtualized import V

    try:
        return set(getattr(getattr(V.graph, "wrapper_code", None), "src_to_kernel", {}).values())
    except (AttributeError, AssertionError):
        return set()


def observing_linear_fallback(events: Events) -> Callable[[Any], Any]:
    """NPUCombinedScheduling.codegen_node tries torch_npu's "linear" index kernel and, when that raises, logs at
    debug level and generates the stock-like "no_linear" kernel instead: record each such fallback with the
    exception, and attribute both it and the checks run meanwhile to the kernels the call defined (after a failed
    check: the no_linear kernel that replaced the checked one)."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def codegen_node(self: Any, node: Any) -> Any:
            linear = self._triton_scheduling
            linear_codegen = linear.codegen_node
            caught: list[BaseException] = []

            def observed(*args: Any, **kwargs: Any) -> Any:
                try:
                    return linear_codegen(*args, **kwargs)
                except Exception as err:
                    caught.append(err)
                    raise

            before = _kernel_names()
            events._pending.checks = []
            linear.codegen_node = observed
            try:
                return original(self, node)
            finally:
                del linear.codegen_node
                kernels = _new_kernels(before)
                checks, events._pending.checks = events._pending.checks, None
                nodes = sorted(child.get_name() for child in node.get_nodes())
                with events._lock:
                    for check in checks:
                        events.checks.append({**check, "kernels": kernels, "nodes": nodes})
                    if caught:
                        events.fallbacks.append(
                            {
                                "fallback": "linear -> no_linear",
                                "where": f"{COMBINED_SCHEDULING}.codegen_node",
                                "error": f"{type(caught[0]).__name__}: {caught[0]}",
                                "nodes": nodes,
                                "kernels": kernels,
                            }
                        )

        return codegen_node

    return replacement


class TtirCheckFailed(RuntimeError):
    """torch_npu's TTIR check rejected a kernel (or could not run): raised where torch_npu's own check raises, so
    its scheduling takes the fallback it takes on hardware (the message gives the compiler's error)."""


def replacing_ttir_check(events: Events, worker: Any) -> Callable[[Any], Any]:
    """``make_ttir_for_check`` sent to ``worker`` (ttir_check.TtirCheckWorker): each check is recorded with its
    result, and raises :class:`TtirCheckFailed` unless it passed."""

    def replacement(original: Any) -> Any:
        events.ttir_worker = worker

        @wraps_original(original)
        def make_ttir_for_check(self: Any, src_code: str) -> None:
            answer = worker.check(src_code)
            check = {
                "check": "ttir",
                "where": worker.target,
                "result": answer["result"],  # "passed", "failed" (the compiler's error) or "error" (did not run)
                "error": answer["error"],
                "seconds": answer["seconds"],
            }
            pending = getattr(events._pending, "checks", None)
            if pending is None:
                with events._lock:
                    events.checks.append({**check, "kernels": [], "nodes": []})
            else:
                pending.append(check)
            if answer["result"] != "passed":
                raise TtirCheckFailed(f"torch_npu's TTIR check {answer['result']}: {answer['error']}")

        return make_ttir_for_check

    return replacement


class TemplatePrecompileFailed(RuntimeError):
    """A template choice did not get through triton-ascend's front end (or could not be compiled here): raised
    where torch_npu's precompile raises on a host, so its select_algorithm tries the next choice."""


def _device_type(request: Any) -> str | None:
    meta = getattr(request, "output_tensor_meta", None)
    meta = meta[0] if isinstance(meta, (list, tuple)) and meta else meta
    return getattr(getattr(meta, "device", None), "type", None)


def replacing_template_precompile(events: Events, worker: Any) -> Callable[[Any], Any]:
    """A Triton template choice's precompile for device "npu" sent to ``worker`` (ttir_check.TtirCheckWorker):
    its module compiled as torch_npu compiles it on a host, up to linalg; each recorded, and
    :class:`TemplatePrecompileFailed` unless it passed. Other devices' choices compile as upstream does."""

    def replacement(original: Any) -> Any:
        events.ttir_worker = worker

        @wraps_original(original)
        def precompile(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _device_type(self) != "npu":
                return original(self, *args, **kwargs)
            from pathlib import Path

            answer = worker.precompile(self.kernel_name, Path(self.module_path).read_text())
            configs = answer.get("configs") or []
            with events._lock:
                events.precompiles.append(
                    {
                        "choice": self.kernel_name,
                        "result": answer["result"],
                        "error": answer["error"],
                        "configs": len(configs),
                        "lowered": sum(1 for config in configs if config.get("ok")),
                        "seconds": answer["seconds"],
                    }
                )
            if answer["result"] != "passed":
                raise TemplatePrecompileFailed(f"triton-ascend's compile {answer['result']}: {answer['error']}")
            # what torch 2.13+'s precompile keeps of the launcher it made: its register count, which triton-ascend
            # 3.2.0's loader reports as 0 (backends/ascend/npu_utils.cpp loadKernelBinary: (mod, func, 0, 0))
            self.n_regs = 0
            return None

        return precompile

    return replacement


def counting_repeated_log_lines(events: Events) -> Callable[[Any], Any]:
    """logging's Logger.callHandlers, passing a torch_npu record below ERROR only the first time its place logs one
    (torch_npu's config.py calls logging.basicConfig, and its tiling warns once per kernel: hundreds of lines);
    every repeat is counted in ``events``. Records of other loggers, and torch_npu's errors, pass as they are."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def callHandlers(self: Any, record: Any) -> Any:
            name = getattr(record, "name", "")
            ours = name == "torch_npu" or name.startswith("torch_npu.")
            if ours and record.levelno < logging.ERROR and not events.first_from_its_place(record):
                return None
            return original(self, record)

        return callHandlers

    return replacement
