"""`codegen --execute`: a graph's compiled module run as written (kernels in Triton's interpreter, externs on the CPU)
beside its eager run, on copies of the same inputs; outputs and mutated inputs compared, a mismatch localised."""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from npu_inductor_compat.tools.simulated.execution.execute_launch import Launch, Session, interpreting, judge
from npu_inductor_compat.tools.simulated.execution.execute_reference import (
    References,
    accurate,
    fp64_outputs,
    rule,
    tolerance,
)
from npu_inductor_compat.tools.simulated.execution.execute_values import copied, difference, output_nodes, random_nodes

STATUSES = ("match", "mismatch", "error", "not run")
WORSE = ("match", "not run", "mismatch", "error")  # which verdict a graph or kernel keeps of two


@dataclass
class Execution:
    """One graph's compiled run against its eager run."""

    status: str  # one of STATUSES
    reason: str | None = None  # why "not run"
    values: list[dict[str, Any]] = field(default_factory=list)  # per output / mutated input: what, status, detail
    launches: list[Launch] = field(default_factory=list)
    error: dict[str, str] | None = None  # the compiled run raised
    first_wrong: dict[str, Any] | None = None  # the first kernel whose written buffers disagree with eager's
    localised: str | None = None  # why no kernel could be named, for a mismatch
    seconds: float = 0.0

    def kernels(self) -> dict[str, dict[str, Any]]:
        """Per kernel: its worst verdict over its launches, launches and configs run, the seconds they took in the
        interpreter, and the first bad config."""
        found: dict[str, dict[str, Any]] = {}
        for launch in self.launches:
            entry = found.setdefault(launch.kernel, {"status": "match", "launches": 0, "configs": 0, "seconds": 0.0})
            entry["launches"] += 1
            entry["configs"] += len(launch.configs)
            entry["seconds"] = round(entry["seconds"] + launch.seconds, 2)
            if WORSE.index(launch.status) > WORSE.index(entry["status"]):
                entry["status"] = launch.status
                bad = next(run for run in launch.configs if run.status == launch.status)
                entry["config"] = bad.summary()
        return found

    def summary(self) -> dict[str, Any]:
        done = {
            "status": self.status,
            "seconds": round(self.seconds, 2),
            "launches": len(self.launches),
            "configs": sum(len(launch.configs) for launch in self.launches),
            "configs_not_run": sum(launch.skipped for launch in self.launches),  # --max-configs
            "kernels": self.kernels(),
            "values": self.values,
        }
        for key in ("reason", "first_wrong", "localised"):
            if getattr(self, key) is not None:
                done[key] = getattr(self, key)
        if self.error is not None:  # its traceback goes into the graph's execution_error.txt
            done["error"] = {key: self.error[key] for key in ("type", "message")}
        return done


def not_run(reason: str) -> Execution:
    return Execution("not run", reason=reason)


@dataclass
class Plan:
    """What one graph's execution needs, taken from Inductor when it generated the graph."""

    source: str  # the Python wrapper module
    eager: Any  # the FX module that runs eagerly (for the script, and as the reference)
    lowered: Any  # the FX module Inductor lowered (after its post-grad passes): its nodes name the buffers
    origins: dict[str, str]  # buffer name -> the FX node (of ``lowered``) whose value it holds
    on_launch: Callable[[Launch], None] | None = None
    max_configs: int | None = None  # --max-configs
    # "forward" (a training forward: its outputs include saved tensors, laid out as Inductor chose), "backward" (its
    # inputs are saved tensors, which Inductor may reuse) or "inference"
    kind: str = "inference"
    layouts: list[Any] = field(default_factory=list)  # input_layouts()


def execute(plan: Plan, inputs: list[Any], run_eager: Callable[[list[Any]], Any]) -> tuple[Any, Execution]:
    """The eager outputs (what the script goes on with), and the compiled run's verdict."""
    import torch

    copies = inputs_copied(inputs)
    if isinstance(copies, str):
        return run_eager(inputs), not_run(copies)
    compiled_inputs, before = copies  # ``before`` never written: the references copy what they run on
    outputs = run_eager(inputs)
    started = time.perf_counter()
    references = References(plan.lowered, plan.origins, before)
    localised = references.reason
    session = Session(
        references=references.eager,
        fp64=references.fp64,
        on_launch=plan.on_launch,
        max_configs=plan.max_configs,
        tolerance=tolerance(plan.kind),
    )
    try:
        with torch.no_grad(), interpreting(session):
            module = _load(plan.source)
            compiled_inputs = laid_out(compiled_inputs, plan.layouts)
            compiled = module.call(list(compiled_inputs))
    except Exception as err:
        judge(session.launches)
        execution = Execution(
            "error",
            error={"type": type(err).__name__, "message": str(err)[:2000], "traceback": traceback.format_exc()},
            launches=session.launches,
        )
        _localise(execution, localised)
        execution.seconds = time.perf_counter() - started
        return outputs, execution
    judge(session.launches)
    execution = Execution("match", launches=session.launches)
    execution.values = judged_values(plan, outputs, compiled, inputs, compiled_inputs, before)
    stopped = next((launch for launch in session.launches if launch.configs[0].status == "not run"), None)
    if stopped is not None:  # what came after it was computed from a buffer the kernel never wrote
        reason = (stopped.configs[0].detail or {}).get("reason")
        execution.status, execution.reason = "not run", f"kernel {stopped.kernel}: {reason}"
        execution.values = []  # not compared: computed from what the kernel never wrote
        execution.seconds = time.perf_counter() - started
        return outputs, execution
    values_differ = any(value["status"] == "mismatch" for value in execution.values)
    if not values_differ:
        _buffers_only(session.launches)
    if values_differ or any(launch.status == "mismatch" for launch in session.launches):
        execution.status = "mismatch"
    if any(launch.status == "error" for launch in session.launches):
        execution.status = "error"
    if execution.status != "match":
        _localise(execution, localised)
    execution.seconds = time.perf_counter() - started
    return outputs, execution


def inputs_copied(inputs: list[Any]) -> tuple[list[Any], list[Any]] | str:
    """Two copies of the inputs (the compiled run's, and their values before any run), or why there are none: the
    graph is then not run, and the script's own (eager) run goes on. Refused when Triton's interpreter cannot run."""
    from npu_inductor_compat.tools.simulated.execution.execute_interpreter import not_ready

    unready = not_ready()
    if unready is not None:
        return unready
    try:
        return [copied(value) for value in inputs], [copied(value) for value in inputs]
    except Exception as err:
        return f"the inputs could not be copied ({type(err).__name__}: {err})"


def judged_values(
    plan: Plan, outputs: Any, compiled: Any, inputs: list[Any], compiled_inputs: list[Any], before: list[Any]
) -> list[dict[str, Any]]:
    """Every output and input of the compiled run against the eager run's (_compare), inputs only the compiled run
    changed said so (_inputs_reused)."""
    fp64 = fp64_outputs(plan.eager, before)
    strides = plan.kind != "forward"  # a training forward's saved tensors may be laid out as Inductor chose
    values = _compare(plan.eager.graph, outputs, compiled, inputs, compiled_inputs, fp64, strides, tolerance(plan.kind))
    return _inputs_reused(values, before, inputs, plan.kind == "backward")


def _load(source: str) -> Any:
    """The wrapper module, its allocations poisoned: what a kernel leaves unwritten shows, instead of whatever the
    memory held (which may equal eager's value, as relu's zeros do)."""
    from torch._inductor.codecache import PyCodeCache

    module = PyCodeCache.load(source)
    allocate = getattr(module, "empty_strided", None)
    if allocate is not None and not getattr(allocate, "poisons", False):
        module.empty_strided = _poisoned(allocate)
    return module


def _poisoned(allocate: Callable[..., Any]) -> Callable[..., Any]:
    """``allocate`` filling what it returns as torch does uninitialized memory when asked to
    (torch.utils.deterministic.fill_uninitialized_memory): NaN for floating point, the largest value for integers."""
    import torch

    def empty_strided(*args: Any, **kwargs: Any) -> Any:
        tensor = allocate(*args, **kwargs)
        with torch.no_grad():
            if tensor.is_floating_point() or tensor.is_complex():
                tensor.fill_(float("nan"))
            elif tensor.dtype != torch.bool:
                tensor.fill_(torch.iinfo(tensor.dtype).max)
        return tensor

    empty_strided.poisons = True  # type: ignore[attr-defined]
    return empty_strided


def _compare(
    graph: Any,
    eager: Any,
    compiled: Any,
    inputs: list[Any],
    compiled_inputs: list[Any],
    fp64: Callable[[], tuple[list[Any], list[Any]] | None],
    strides: bool = True,
    tol: float = 1e-3,
) -> list[dict[str, Any]]:
    """Every output and every input, the compiled run's against the eager run's; values RNG made not compared; a
    value outside torch.testing's tolerance that passes Inductor's fp64 accuracy check matches, saying so."""
    import torch

    random = random_nodes(graph)
    eager = list(eager) if isinstance(eager, list | tuple) else [eager]
    compiled = list(compiled) if isinstance(compiled, list | tuple) else [compiled]
    done: list[dict[str, Any]] = []
    if len(eager) != len(compiled):
        return [
            {"value": "outputs", "status": "mismatch", "problem": f"{len(compiled)} outputs, eager has {len(eager)}"}
        ]
    returned = output_nodes(graph)
    for index, (want, got) in enumerate(zip(eager, compiled, strict=True)):
        node = returned[index] if index < len(returned) else None
        name = getattr(node, "name", None)
        entry: dict[str, Any] = {"value": f"output {index}" + (f" ({name})" if name is not None else "")}
        if name in random:
            done.append({**entry, "status": "random"})
            continue
        found = difference(want, got, strides=strides)
        done.append(_judged(entry, want, got, found, functools.partial(_fp64_value, fp64, 0, index), tol))
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    randomly_mutated = _randomly_mutated(graph, random)
    for index, (want, got) in enumerate(zip(inputs, compiled_inputs, strict=True)):
        if not isinstance(want, torch.Tensor):
            continue
        name = placeholders[index].name if index < len(placeholders) else str(index)
        found = difference(want, got, strides=False)
        if found is None:
            continue
        entry = {"value": f"input {index} ({name})"}
        if name in randomly_mutated:
            done.append({**entry, "status": "random"})
        else:
            done.append(_judged(entry, want, got, found, functools.partial(_fp64_value, fp64, 1, index), tol))
    return done


def _buffers_only(launches: list[Launch]) -> None:
    """Every output and input matches: a buffer that differs from its FX node's eager value (a node that stands for
    it only in part) localises nothing and fails nothing; configs must still agree with config 0."""
    for launch in launches:
        for run in launch.configs:
            if run.status == "mismatch" and run.against == "eager":
                run.status, run.against = "match", "the graph's values (its buffer differs from its FX node's)"


def _inputs_reused(
    values: list[dict[str, Any]], before: list[Any], after: list[Any], backward: bool
) -> list[dict[str, Any]]:
    """An input only the compiled run changed: a backward's saved tensor whose buffer Inductor reused once it was
    read (donated: torch._functorch.config.donated_buffer) is "reused", not compared; anywhere else the compiled code
    wrote into a tensor the caller still holds, which is a mismatch, said so."""
    done = []
    for value in values:
        if value["value"].startswith("input ") and value["status"] == "mismatch":
            index = int(value["value"].split()[1])
            eager_changed = difference(before[index], after[index], strides=False) is not None
            if not eager_changed:
                if backward:
                    value = {"value": value["value"], "status": "reused"}
                else:
                    value = {**value, "problem": "the compiled run changed it, eager leaves it as it was"}
        done.append(value)
    return done


def _fp64_value(fp64: Callable[[], tuple[list[Any], list[Any]] | None], part: int, index: int) -> Any:
    found = fp64()
    return None if found is None or index >= len(found[part]) else found[part][index]


def _judged(
    entry: dict[str, Any], want: Any, got: Any, found: dict[str, Any] | None, fp64: Callable[[], Any], tol: float
) -> dict[str, Any]:
    """A value's entry: a match, or a mismatch; one outside torch.testing's tolerance with only its values
    differing is asked of Inductor's accuracy check too."""
    import torch

    if found is None:
        return {**entry, "status": "match"}
    if "max_abs" in found and isinstance(want, torch.Tensor) and want.is_floating_point():
        reference = fp64()
        if reference is not None and accurate(want, got, reference, tol):
            return {**entry, "status": "match", "rule": rule(tol), "tolerance": found["problem"]}
    return {**entry, "status": "mismatch", **found}


def _randomly_mutated(graph: Any, random: set[str]) -> set[str]:
    """The graph inputs it writes a value RNG made into (copy_ into a placeholder)."""
    found = set()
    for node in graph.nodes:
        if node.op == "call_function" and "copy_" in str(node.target) and len(node.args) >= 2:
            target, source = node.args[0], node.args[1]
            if getattr(target, "op", None) == "placeholder" and getattr(source, "name", None) in random:
                found.add(target.name)
    return found


def _localise(execution: Execution, unavailable: str | None) -> None:
    """Name the first launch (in the wrapper's order) whose config-0 values disagree with eager's, or the first
    that raised; else say why no kernel is named."""
    for launch in execution.launches:
        run = launch.configs[0] if launch.configs else None
        if run is not None and (run.status == "error" or (run.status == "mismatch" and run.against == "eager")):
            execution.first_wrong = {"kernel": launch.kernel, **run.summary()}
            return
    for launch in execution.launches:
        bad = next((run for run in launch.configs if run.status != "match"), None)
        if bad is not None:
            execution.first_wrong = {"kernel": launch.kernel, **bad.summary()}
            return
    if execution.status != "mismatch":
        return
    execution.localised = unavailable or (
        "no kernel's written buffers disagree with an eager value: the difference comes from outside the Triton "
        "kernels (an extern kernel, a fallback, the wrapper), or from a buffer no FX node's value stands for"
    )


def input_layouts(graph: Any) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
    """Per graph input (placeholder order), the sizes and strides Inductor compiled the graph for, where they are
    numbers (GraphLowering.graph_inputs); None for a symbolic one or a non-tensor."""
    layouts: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = []
    for name in getattr(graph, "graph_input_names", ()):
        value = graph.graph_inputs.get(name)
        try:
            size = tuple(int(dim) for dim in value.get_size())
            stride = tuple(int(dim) for dim in value.get_stride())
        except (AttributeError, TypeError, NotImplementedError):
            layouts.append(None)
            continue
        layouts.append((size, stride))
    return layouts


def laid_out(values: list[Any], layouts: list[Any]) -> list[Any]:
    """The inputs in the layouts the graph was compiled for: a backward compiled against its compiled forward's
    saved tensors (channels-last, say) gets them so, where the script's eager forward saved them contiguous."""
    import torch

    done = []
    for index, value in enumerate(values):
        layout = layouts[index] if index < len(layouts) else None
        if isinstance(value, torch.Tensor) and layout is not None and tuple(value.shape) == layout[0]:
            if tuple(value.stride()) != layout[1] and torch._debug_has_internal_overlap(value) == 0:
                copy = torch.empty_strided(layout[0], layout[1], dtype=value.dtype, device=value.device)
                value = copy.copy_(value)
        done.append(value)
    return done


def origins_of(graph: Any) -> dict[str, str]:
    """Each buffer Inductor lowered (GraphLowering.buffers) -> the FX node whose value it holds (its origin_node)."""
    found = {}
    for buffer in getattr(graph, "buffers", ()):
        node = getattr(buffer, "origin_node", None)
        try:
            name = buffer.get_name()
        except Exception:  # a buffer without a name holds nothing a kernel is passed
            continue
        if node is not None:
            found[name] = node.name
    return found


class ExecutingModule:
    """Stands where Inductor expects the compiled module: ``call`` runs the graph's FX module eagerly for the
    script and, at the first call with each set of input sizes (a dynamic graph serves several), the compiled module
    beside it (``done`` receives each verdict)."""

    def __init__(self, plan: Plan, done: Callable[[Execution], None], run: Callable[..., Any] | None = None) -> None:
        self._plan = plan
        self._done = done
        self._run = run or execute  # execute_cpp.execute_cpp for a C++ wrapper
        self._sizes: set[tuple[Any, ...]] = set()

    def call(self, args: list[Any]) -> Any:
        import torch

        inputs = list(args)
        args.clear()  # Inductor's boxed calling convention: the callee owns and frees the inputs
        sizes = tuple(tuple(value.shape) if isinstance(value, torch.Tensor) else value for value in inputs)
        if sizes in self._sizes:
            return _eager(self._plan.eager, inputs)
        self._sizes.add(sizes)
        outputs, execution = self._run(self._plan, inputs, lambda values: _eager(self._plan.eager, values))
        self._done(execution)
        return outputs


def _eager(module: Any, inputs: list[Any]) -> tuple[Any, ...]:
    outputs = module(*inputs)
    return tuple(outputs) if isinstance(outputs, list | tuple) else (outputs,)
