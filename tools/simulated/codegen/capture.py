"""Codegen-only capture: Inductor lowers, schedules and generates code for every graph; nothing is compiled or
launched. Each compiled graph instead runs its FX graph eagerly (on the simulated NPU, CPU underneath), so user
scripts — ``.backward()`` and value checks included — run unchanged and correctly."""

# The capture hooks are journal records too (their own journal, undone when the capture ends).

from __future__ import annotations

import ast
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeGuard

from npu_inductor_compat.patching import Change, Journal, Patch, wraps_original
from npu_inductor_compat.tools.simulated.codegen import choice_failures
from npu_inductor_compat.tools.simulated.codegen.settings import Settings, applied, in_every_thread, with_caches_off

KERNEL_DEFINERS = (
    "torch._inductor.codegen.wrapper:PythonWrapperCodegen.define_kernel",
    "torch._inductor.codegen.cpp_wrapper_cpu:CppWrapperCpu.define_kernel",
    "torch._inductor.codegen.cpp_wrapper_gpu:CppWrapperGpu.define_kernel",
)


@dataclass
class GraphRecord:
    """What Inductor generated for one graph (or how it failed), and what the graph was, read from Inductor itself."""

    index: int
    kind: str  # "forward", "backward" or "inference"
    wrapper: str  # "python" or "cpp"
    kernels: dict[str, str] = field(default_factory=dict)  # name -> source, in definition order
    wrapper_source: str | None = None
    # "module:Class" of the wrapper codegen that generated wrapper_source (GraphLowering.wrapper_code's class)
    wrapper_class: str | None = None
    error: dict[str, str] | None = None
    compile_id: str | None = None  # Dynamo's "frame/attempt" id; a lazily compiled backward keeps its forward's
    devices: tuple[str, ...] = ()  # the device types of the graph's tensors (GraphLowering.device_types)
    dynamic: bool = False  # a graph input has a symbolic size or stride (or is a symbolic scalar)
    recompile_reasons: list[str] = field(default_factory=list)  # why Dynamo recompiled the frame for this graph
    forward: int | None = None  # for a backward graph: the index of the forward graph it belongs to
    choice_failures: list[dict[str, str]] = field(default_factory=list)  # template choices that failed to compile
    execution: Any = None  # codegen --execute: the compiled module's run against eager (execute.Execution)
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0

    @property
    def device(self) -> str:
        return "+".join(self.devices) if self.devices else "none"

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        return "ok" if "npu" in self.devices else "not npu"

    def summary(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "compile_id": self.compile_id,
            "kind": self.kind,
            "forward": self.forward,
            "device": self.device,
            "status": self.status,
            "wrapper": self.wrapper,
            "wrapper_class": self.wrapper_class,
            "dynamic": self.dynamic,
            "recompile_reasons": list(self.recompile_reasons),
            "seconds": round(self.seconds, 2),
            "kernels": list(self.kernels),
            "error": None if self.error is None else {key: self.error[key] for key in ("type", "message")},
            **({"choice_failures": list(self.choice_failures)} if self.choice_failures else {}),
            **({"execution": self.execution.summary()} if self.execution is not None else {}),
        }


@dataclass
class Capture:
    graphs: list[GraphRecord] = field(default_factory=list)
    on_graph: Callable[[GraphRecord], None] | None = None  # called once per kept graph (progress lines)
    pending_recompile_reasons: list[str] = field(default_factory=list)  # for the next graph Dynamo compiles
    lock: threading.Lock = field(default_factory=threading.Lock)
    current: dict[int, GraphRecord] = field(default_factory=dict)  # id(GraphLowering) -> its record
    # id(GraphModule) -> a copy taken before Inductor's post-grad passes, which rewrite the graph for lowering only
    # (e.g. reinplacing a foreach op leaves a getitem of its None result): that copy is what runs eagerly.
    before_passes: dict[int, Any] = field(default_factory=dict)
    # codegen --execute: each graph's compiled module also runs (execute.py); called with the record when it has
    execute: bool = False
    max_configs: int | None = None  # --max-configs: each kernel's first configs only
    on_execution: Callable[[GraphRecord], None] | None = None
    on_launch: Callable[[GraphRecord, Any], None] | None = None  # each kernel launch executed (progress)
    cpp_runtime: Any = None  # --execute of C++ wrappers: the loaded emulated runtime, or why there is none

    def failed(self) -> list[GraphRecord]:
        return [graph for graph in self.graphs if graph.error is not None]


def _graph_kind(graph: Any) -> str:
    if getattr(graph, "is_backward", False):
        return "backward"
    if getattr(graph, "is_inference", False):
        return "inference"
    return "forward"


class KernelDefinition(NamedTuple):
    method: str | None  # the async_compile method the wrapper defines the kernel with: "triton", "cpp_pybinding", ...
    source: str | None  # the kernel's own source (for "triton": a module with the @triton.jit function), if literal


def is_async_compile(func: ast.expr) -> TypeGuard[ast.Attribute]:
    """Whether a call's function is ``async_compile.<method>`` (how a wrapper defines each kernel)."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "async_compile"


def kernel_definition(fragment: str) -> KernelDefinition:
    """Read a kernel as the wrapper defines it, ``name = async_compile.triton('name', '''source''', ...)``: which
    method, and the source it passes (for Triton, a complete module: imports, the autotuning decorator, the kernel)."""
    try:
        tree = ast.parse(fragment)
    except SyntaxError:
        return KernelDefinition(None, None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and is_async_compile(node.func):
            texts = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            return KernelDefinition(node.func.attr, texts[1] if len(texts) >= 2 else None)
    return KernelDefinition(None, None)


def _compile_id() -> str | None:
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    return None if compile_id is None else str(compile_id)


def _device_types(graph: Any) -> tuple[str, ...]:
    return tuple(sorted(str(kind) for kind in getattr(graph, "device_types", ())))


def _is_dynamic(graph: Any) -> bool:
    """Whether the graph Inductor lowered has a symbolic input: a size or stride of an input tensor, or a scalar."""
    for value in getattr(graph, "graph_inputs", {}).values():
        parts: list[Any] = [value]
        if hasattr(value, "get_size"):
            try:
                parts = [*value.get_size(), *value.get_stride()]
            except (AttributeError, NotImplementedError, TypeError):
                parts = list(value.get_size())
        if any(getattr(part, "free_symbols", None) for part in parts):
            return True
    return False


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
            record = GraphRecord(
                index=-1,
                kind=_graph_kind(self),
                wrapper="cpp" if self.cpp_wrapper else "python",
                compile_id=_compile_id(),
            )
            with capture.lock:
                record.recompile_reasons, capture.pending_recompile_reasons = capture.pending_recompile_reasons, []
            capture.current[id(self)] = record
            try:
                return original(self, *args)
            except Exception as err:
                record.error = _error(err)
                choice_failures.explain(record.error, record.choice_failures)
                record.devices = _device_types(self)
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
                if record is not None and "npu" in _device_types(self):
                    _seed_first_pass(record)  # as running the first pass's module would
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
            else:
                # what loading the module (PyCodeCache.load) does first: a module that is not Python fails there
                try:
                    compile(record.wrapper_source, f"<graph {record.wrapper} wrapper module>", "exec")
                except SyntaxError as err:
                    record.error = _error(err)
                    record.error["message"] = f"the generated wrapper module is not valid Python: {err}"
                    raise
            finally:
                wrapper = getattr(self, "wrapper_code", None)
                if wrapper is not None:
                    record.wrapper_class = f"{type(wrapper).__module__}:{type(wrapper).__qualname__}"
                record.devices = _device_types(self)
                record.dynamic = _is_dynamic(self)
                capture.current.pop(id(self), None)
                _keep(capture, record)
            eager = capture.before_passes.pop(id(self.module), self.module)
            if capture.execute:
                return _executing(capture, record, self, eager)
            return _EagerModule(eager)

        return compile_to_module

    return replacement


def _executing(capture: Capture, record: GraphRecord, graph: Any, eager: Any) -> Any:
    """codegen --execute: the module that runs ``eager`` for the script and the wrapper beside it, or the reason
    this graph's wrapper is not run."""
    from npu_inductor_compat.tools.simulated.execution import execute

    reason = None
    cpp = record.wrapper != "python"
    if cpp:
        from npu_inductor_compat.tools.simulated.execution.execute_cpp import graph_kernels

        kernels = graph_kernels(record.wrapper_source or "")  # taken now: the next graph's kernels are its own
        if isinstance(capture.cpp_runtime, str):
            reason = f"the C++ wrapper is not run: {capture.cpp_runtime}"
    if "npu" not in record.devices:
        reason = "not an npu graph"
    if reason is not None:
        record.execution = execute.not_run(reason)
        return _EagerModule(eager)

    def done(execution: Any) -> None:  # a graph run at several sizes keeps its worst verdict, and every launch
        previous = record.execution
        if previous is not None:
            worst = execute.WORSE.index
            kept = execution if worst(execution.status) > worst(previous.status) else previous
            launches = [*previous.launches, *execution.launches]
            execution = replace(kept, launches=launches, seconds=previous.seconds + execution.seconds)
        record.execution = execution
        if capture.on_execution is not None:
            capture.on_execution(record)

    def launched(launch: Any) -> None:
        if capture.on_launch is not None:
            capture.on_launch(record, launch)

    origins = execute.origins_of(graph)
    plan = execute.Plan(
        record.wrapper_source or "",
        eager,
        graph.module,
        origins,
        launched,
        capture.max_configs,
        kind=record.kind,
        layouts=execute.input_layouts(graph),
    )
    if cpp:
        from npu_inductor_compat.tools.simulated.execution.execute_cpp import execute_cpp

        runtime = capture.cpp_runtime
        return execute.ExecutingModule(plan, done, lambda *run: execute_cpp(*run, runtime=runtime, kernels=kernels))
    return execute.ExecutingModule(plan, done)


def _seed_first_pass(record: GraphRecord) -> None:
    """The first pass's Triton kernels save their launch params (tools/simulated/codegen/kernel_params.py
    seed_first_pass)."""
    from npu_inductor_compat.tools.simulated.codegen.kernel_params import seed_first_pass

    sources = {}
    for name, fragment in record.kernels.items():
        found = kernel_definition(fragment)
        if found.method == "triton" and found.source is not None:
            sources[name] = found.source
    seed_first_pass(sources)


def _keep(capture: Capture, record: GraphRecord) -> None:
    with capture.lock:
        # AOTAutograd retries a backward whose eager compile failed: one record per distinct failure is enough.
        if record.error is not None and any(
            old.error is not None and old.kind == record.kind and old.error["message"] == record.error["message"]
            for old in capture.graphs
        ):
            return
        record.index = len(capture.graphs)
        record.seconds = time.perf_counter() - record.started
        if record.kind == "backward" and record.compile_id is not None:
            # AOTAutograd compiles a backward (often lazily, at the first .backward()) under its forward's compile id
            record.forward = next(
                (
                    old.index
                    for old in reversed(capture.graphs)
                    if old.kind == "forward" and old.compile_id == record.compile_id
                ),
                None,
            )
        capture.graphs.append(record)
    if capture.on_graph is not None:
        capture.on_graph(record)


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


def _recording_recompile_reasons(capture: Capture) -> Any:
    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def get_and_maybe_log_recompilation_reasons(*args: Any, **kwargs: Any) -> Any:
            reasons = original(*args, **kwargs)
            if reasons:
                with capture.lock:
                    capture.pending_recompile_reasons = [str(reason) for reason in reasons]
            return reasons

        return get_and_maybe_log_recompilation_reasons

    return replacement


def _choice_failures_of(capture: Capture) -> Any:
    def failures_of() -> list[dict[str, str]] | None:
        from torch._inductor.virtualized import V

        record = capture.current.get(id(V.graph)) if V.graph is not None else None
        return None if record is None else record.choice_failures

    return failures_of


def capture_records(capture: Capture) -> list[Patch]:
    return [
        choice_failures.observer(_choice_failures_of(capture)),
        Patch(
            id="capture-recompile-reasons",
            layer="capture",
            why="say in each graph's summary why Dynamo recompiled its frame (the guard failures it logs)",
            upstream="torch._dynamo.guards.get_and_maybe_log_recompilation_reasons, as convert_frame imports it",
            remove_when="never: this is the codegen command's capture",
            changes=(
                Change(
                    "torch._dynamo.convert_frame:get_and_maybe_log_recompilation_reasons",
                    _recording_recompile_reasons(capture),
                    optional=True,
                ),
            ),
        ),
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
def capturing(
    on_graph: Callable[[GraphRecord], None] | None = None,
    settings: Settings | None = None,
    execute: bool = False,
    max_configs: int | None = None,
) -> Iterator[Capture]:
    """Inside: every Inductor graph is captured (codegen only) and runs eagerly, with ``settings`` ({config module:
    {name: value}}) and Inductor's caches off (settings.CACHES_OFF) in every thread; with ``execute``, the first
    call of each also runs its compiled module (execute.py). Undone on exit."""
    merged = with_caches_off(settings)
    capture = Capture(on_graph=on_graph, execute=execute, max_configs=max_configs)
    journal = Journal()
    records = [*capture_records(capture), in_every_thread(merged)]
    if execute:
        from npu_inductor_compat.tools.simulated.execution.cpp_device import SAVED_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_bounds import BOUNDS_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_interpreter import interpreter_records
        from npu_inductor_compat.tools.simulated.execution.execute_launch import LAUNCH_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_replay import REPLAY_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_speed import SPEED_RECORD
        from npu_inductor_compat.tools.simulated.execution.execute_split import SPLIT_RECORD
        from npu_inductor_compat.tools.simulated.execution.isa_verdicts import ISA_VERDICTS_RECORD

        execution = [SPEED_RECORD, REPLAY_RECORD, SPLIT_RECORD, BOUNDS_RECORD, LAUNCH_RECORD, SAVED_RECORD]
        records += [*interpreter_records(), *execution]
        records.append(ISA_VERDICTS_RECORD)
    journal.apply(records)
    try:
        with applied(merged):
            yield capture
    finally:
        journal.undo()
