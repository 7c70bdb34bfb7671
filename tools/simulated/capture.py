"""Codegen-only capture: Inductor lowers, schedules and generates code for every graph; nothing is compiled or
launched. Each compiled graph instead runs its FX graph eagerly (on the simulated NPU, CPU underneath), so user
scripts — ``.backward()`` and value checks included — run unchanged and correctly.

The capture hooks are journal records too (their own journal, undone when the capture ends).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.patching import Change, Journal, Patch, wraps_original

KERNEL_DEFINERS = (
    "torch._inductor.codegen.wrapper:PythonWrapperCodegen.define_kernel",
    "torch._inductor.codegen.cpp_wrapper_cpu:CppWrapperCpu.define_kernel",
    "torch._inductor.codegen.cpp_wrapper_gpu:CppWrapperGpu.define_kernel",
)


@dataclass
class GraphRecord:
    """What Inductor generated for one graph (or how it failed)."""

    index: int
    kind: str  # "forward", "backward" or "inference"
    wrapper: str  # "python" or "cpp"
    kernels: dict[str, str] = field(default_factory=dict)  # name -> source, in definition order
    wrapper_source: str | None = None
    error: dict[str, str] | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "wrapper": self.wrapper,
            "kernels": list(self.kernels),
            "error": self.error,
        }


@dataclass
class Capture:
    graphs: list[GraphRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    current: dict[int, GraphRecord] = field(default_factory=dict)  # id(GraphLowering) -> its record
    # id(GraphModule) -> a copy taken before Inductor's post-grad passes, which rewrite the graph for lowering only
    # (e.g. reinplacing a foreach op leaves a getitem of its None result): that copy is what runs eagerly.
    before_passes: dict[int, Any] = field(default_factory=dict)

    def failed(self) -> list[GraphRecord]:
        return [graph for graph in self.graphs if graph.error is not None]


def _graph_kind(graph: Any) -> str:
    if getattr(graph, "is_backward", False):
        return "backward"
    if getattr(graph, "is_inference", False):
        return "inference"
    return "forward"


def _source_text(generated: Any) -> str:
    # codegen() returns (wrapper, kernels) as ValueWithLineMap objects (or strings on some paths).
    value = getattr(generated, "value", generated)
    return value if isinstance(value, str) else str(value)


class _EagerModule:
    """Stands where Inductor expects the compiled module: ``call`` runs the graph's FX module eagerly."""

    def __init__(self, graph_module: Any) -> None:
        self._graph_module = graph_module

    def call(self, args: list[Any]) -> Any:
        inputs = list(args)
        args.clear()  # Inductor's boxed calling convention: the callee owns and frees the inputs
        outputs = self._graph_module(*inputs)
        return tuple(outputs) if isinstance(outputs, list | tuple) else (outputs,)


def _error(err: BaseException) -> dict[str, str]:
    return {"type": type(err).__name__, "message": str(err), "traceback": traceback.format_exc()}


def _lowering_capturing(capture: Capture) -> Any:
    """A graph's record starts when Inductor lowers it, so a failure while lowering is captured too."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def run(self: Any, *args: Any) -> Any:
            if capture.current:  # a subgraph lowered inside a graph that is already being captured
                return original(self, *args)
            record = GraphRecord(index=-1, kind=_graph_kind(self), wrapper="cpp" if self.cpp_wrapper else "python")
            capture.current[id(self)] = record
            try:
                return original(self, *args)
            except Exception as err:
                record.error = _error(err)
                del capture.current[id(self)]
                _keep(capture, record)
                raise

        return run

    return replacement


def _compile_to_module_capturing(capture: Capture) -> Any:
    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def compile_to_module(self: Any) -> Any:
            record = capture.current.get(id(self))
            if record is None or record.wrapper_source == "":  # the first pass of cpp_wrapper's two-pass codegen
                self.codegen()
                return _EagerModule(capture.before_passes.get(id(self.module), self.module))
            record.wrapper = "cpp" if self.cpp_wrapper else "python"
            record.wrapper_source = ""  # marks "generating": a nested call is that first pass
            try:
                wrapper_code, _ = self.codegen_with_cpp_wrapper() if self.cpp_wrapper else self.codegen()
                record.wrapper_source = _source_text(wrapper_code)
            except Exception as err:
                record.wrapper_source = None
                record.error = _error(err)
                raise
            finally:
                capture.current.pop(id(self), None)
                _keep(capture, record)
            return _EagerModule(capture.before_passes.pop(id(self.module), self.module))

        return compile_to_module

    return replacement


def _keep(capture: Capture, record: GraphRecord) -> None:
    with capture.lock:
        # AOTAutograd retries a backward whose eager compile failed: one record per distinct failure is enough.
        if record.error is not None and any(
            old.error is not None and old.kind == record.kind and old.error["message"] == record.error["message"]
            for old in capture.graphs
        ):
            return
        record.index = len(capture.graphs)
        capture.graphs.append(record)


def _recording_define_kernel(capture: Capture) -> Any:
    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def define_kernel(self: Any, kernel_name: str, kernel_body: str, *args: Any, **kwargs: Any) -> Any:
            from torch._inductor.virtualized import V

            record = capture.current.get(id(V.graph))
            if record is not None and kernel_name not in record.kernels:
                record.kernels[kernel_name] = kernel_body
            return original(self, kernel_name, kernel_body, *args, **kwargs)

        return define_kernel

    return replacement


def _keeping_the_graph_before_passes(capture: Capture) -> Any:
    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def _recursive_post_grad_passes(gm: Any, *args: Any, **kwargs: Any) -> Any:
            import copy

            try:
                kept = copy.deepcopy(gm)
            except Exception:  # a graph that cannot be copied runs as lowered, as before
                kept = None
            result = original(gm, *args, **kwargs)
            if kept is not None:
                with capture.lock:
                    capture.before_passes[id(gm)] = kept
            return result

        return _recursive_post_grad_passes

    return replacement


def capture_records(capture: Capture) -> list[Patch]:
    return [
        Patch(
            id="capture-graph-before-passes",
            layer="capture",
            why="run each graph eagerly as it was before Inductor's post-grad passes, which rewrite it for lowering "
            "only (a reinplaced foreach op leaves a getitem of its None result: optimizer steps could not run)",
            upstream="torch._inductor.compile_fx._recursive_post_grad_passes",
            remove_when="never: this is the codegen command's capture",
            changes=(
                Change(
                    "torch._inductor.compile_fx:_recursive_post_grad_passes", _keeping_the_graph_before_passes(capture)
                ),
            ),
        ),
        Patch(
            id="capture-lowering",
            layer="capture",
            why="start a graph's record when Inductor lowers it, so lowering failures are captured too",
            upstream="GraphLowering.run (torch.fx.Interpreter.run)",
            remove_when="never: this is the codegen command's capture",
            changes=(Change("torch._inductor.graph:GraphLowering.run", _lowering_capturing(capture)),),
        ),
        Patch(
            id="capture-compile-to-module",
            layer="capture",
            why="keep the generated wrapper and kernels, compile nothing, run the FX graph eagerly instead",
            upstream="torch._inductor.utils.run_and_get_code replaces compile_to_module the same way",
            remove_when="never: this is the codegen command's capture",
            changes=(
                Change("torch._inductor.graph:GraphLowering.compile_to_module", _compile_to_module_capturing(capture)),
            ),
        ),
        Patch(
            id="capture-define-kernel",
            layer="capture",
            why="record every kernel's name and source as the wrapper defines it",
            upstream="PythonWrapperCodegen.define_kernel / CppWrapperCpu / CppWrapperGpu overrides",
            remove_when="never: this is the codegen command's capture",
            changes=tuple(
                Change(target, _recording_define_kernel(capture), optional=True) for target in KERNEL_DEFINERS
            ),
        ),
    ]


@contextmanager
def capturing() -> Iterator[Capture]:
    """Inside: every Inductor graph is captured (codegen only) and runs eagerly. Undone on exit.

    Inductor's caches are off inside: a cached graph would skip codegen, and a cached stub breaks later runs
    ("'CompiledFxGraph' object has no attribute 'source_code'").
    """
    import torch._inductor.config as inductor_config

    capture = Capture()
    journal = Journal()
    journal.apply(capture_records(capture))
    try:
        with inductor_config.patch(force_disable_caches=True, fx_graph_cache=False):
            yield capture
    finally:
        journal.undo()
