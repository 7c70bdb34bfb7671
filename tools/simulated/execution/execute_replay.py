"""`codegen --execute` at the builder's pace: a launch's first program runs in Triton's interpreter, its builder calls
kept; each later program makes the same calls with its own program id, unless Python read a value the first computed."""

from __future__ import annotations

from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated.execution.execute_split import shadowing

# Builder calls whose result may differ between programs however alike their arguments: the program id, memory,
# and side effects. Any other call (types, constants, arithmetic, shapes) gives every program the first one's
# result when its arguments are results of such calls or constants, and is made once.
VARYING = ("program_id", "load", "store", "atomic", "barrier", "assert", "print", "inline_asm", "extern", "descriptor")

READ = "the kernel's Python read a value loaded from memory (an if, range, min or print on it)"
FOREIGN = "the kernel used a value computed outside the interpreter's builder (a transpose, say)"
# launches whose later programs were replayed, and run each in the interpreter; later programs of replayed launches
# run in the interpreter as their Python read other values than the first's (a branch on the program id, say)
COUNTS = {"replayed": 0, "interpreted": 0, "programs interpreted": 0}
REASONS: dict[str, int] = {}  # why a launch's programs were interpreted, one count a launch


class _Ref:
    """A step's result as an argument of a later step (``path``: the element of a tuple it returned, or the handle of
    a tensor)."""

    __slots__ = ("index", "path")

    def __init__(self, index: int, path: tuple[int | str, ...]) -> None:
        self.index, self.path = index, path


class _Tensor:
    """A triton.language tensor argument (of a reduction or scan) whose handle a step returned."""

    __slots__ = ("handle", "type")

    def __init__(self, handle: _Ref, type: Any) -> None:
        self.handle, self.type = handle, type


class _Many:
    """A list or tuple argument holding results of earlier steps."""

    __slots__ = ("items", "kind")

    def __init__(self, kind: type, items: list[Any]) -> None:
        self.kind, self.items = kind, items


def _resolve(template: Any, values: list[Any]) -> Any:
    if type(template) is _Ref:
        value = values[template.index]
        for step in template.path:
            value = getattr(value, step) if type(step) is str else value[step]
        return value
    if type(template) is _Tensor:
        import triton.language as tl

        return tl.core.tensor(_resolve(template.handle, values), template.type)
    if type(template) is _Many:
        return template.kind(_resolve(item, values) for item in template.items)
    return template


class _Recorder:
    """One program run by the interpreter with every builder call and every reduction or scan the kernel's Python
    makes kept as a step (what a step calls inside is part of it), and whatever makes those steps unfit for another
    program noted: Python reading a value computed in the program (an ``if``, a ``range``, a ``min`` or a print on a
    tensor; unfit where that value differs between programs), or a value made outside the steps (a transpose's
    NumPy, say) used. One launch records at a time, as the interpreter runs one (its builder is one object)."""

    def __init__(self, tensor_class: Any) -> None:
        self.tensor_class = tensor_class  # triton.language's tensor: a reduction's operands and results
        self.depth = 0
        self.steps: list[tuple[str, Any, Any, Any, bool]] = []  # (name, bound method, args, kwargs, hold results?)
        self.outputs: list[Any] = []  # what each step returned
        self.produced: dict[int, _Ref] = {}  # id of an object a step returned -> where it is found
        self.created: set[int] = set()  # ids of the TensorHandles made while recording
        self.kept: list[Any] = []  # every object whose id is noted above, alive while the ids are read
        self.reads: list[tuple[_Ref, Any]] = []  # the results the kernel's Python read, with what it read
        self.why_not: str | None = None

    def wrap(self, name: str, method: Any) -> Any:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return method(*args, **kwargs)
            held = [False]
            arg_template = tuple(self._template(value, held) for value in args)
            kwarg_template = {name: self._template(value, held) for name, value in kwargs.items()}
            self.depth += 1
            try:
                out = method(*args, **kwargs)
            finally:
                self.depth -= 1
            self._produce(out, len(self.steps), ())
            self.steps.append((name, method, arg_template, kwarg_template, held[0]))
            self.outputs.append(out)
            return out

        return recorded

    def _template(self, value: Any, held: list[bool]) -> Any:
        ref = self.produced.get(id(value))
        if ref is not None:
            held[0] = True
            return ref
        if id(value) in self.created:
            self.why_not = FOREIGN
        if type(value) in (list, tuple):
            items = [self._template(item, held) for item in value]
            if any(type(item) in (_Ref, _Tensor, _Many) for item in items):
                return _Many(type(value), items)
        if isinstance(value, self.tensor_class):
            ref = self._template(value.handle, held)
            if type(ref) is _Ref:
                return _Tensor(ref, value.type)
        return value

    def _produce(self, out: Any, index: int, path: tuple[int | str, ...]) -> None:
        if out is None or isinstance(out, int | float | str | bytes):
            return
        self.produced[id(out)] = _Ref(index, path)
        self.kept.append(out)
        if type(out) in (list, tuple):
            for position, item in enumerate(out):
                self._produce(item, index, (*path, position))
        elif isinstance(out, self.tensor_class):
            self._produce(out.handle, index, (*path, "handle"))

    def made(self, handle: Any) -> None:
        self.created.add(id(handle))
        self.kept.append(handle)

    def read(self, handle: Any) -> None:
        """Python read ``handle``'s value (not the builder: a step reads what it likes). A step's result is noted,
        and stands in the way if that step varies between programs; a value made outside the builder always does."""
        if self.depth or id(handle) not in self.created:
            return
        ref = self.produced.get(id(handle))
        if ref is None:
            self.why_not = FOREIGN
        else:
            self.reads.append((ref, handle.__dict__["data"].copy()))


# The builder methods a kernel's Python reaches (InterpreterBuilder, runtime/interpreter.py, Triton 3.3 to 3.7): its
# create_* operations and get_* constants and types. Its other methods are its own helpers or the grid's.
def _builder_methods(builder: Any) -> list[str]:
    return [
        name for name in dir(type(builder)) if name.startswith(("create_", "get_")) and callable(getattr(builder, name))
    ]


def _recorded(fn: Any, args: dict[str, Any], builder: Any) -> _Recorder:
    """``fn(**args)`` run once by the interpreter, recorded. Raises what the program raises."""
    import triton.language as tl
    from triton.runtime import interpreter

    recorder = _Recorder(tl.core.tensor)
    names = _builder_methods(builder)
    # the interpreter's reductions and scans are steps too: they compute with NumPy from their operands alone
    # (ReduceScanOpInterface.apply, the one entry of ReduceOps and ScanOps, Triton 3.3 to 3.7)
    folding: Any = getattr(interpreter, "ReduceScanOpInterface", None)
    fold = vars(folding).get("apply") if folding is not None else None
    handle_class = interpreter.TensorHandle
    init = vars(handle_class).get("__init__")
    # every read of a handle's NumPy data goes through a property while recording (a dataclass field lives in the
    # instance's __dict__): triton.language's re-patching of tensor methods at device-function calls cannot hide it
    if init is None or "data" in vars(handle_class) or not hasattr(handle_class, "__dict__"):
        recorder.why_not = "this Triton's interpreter keeps its values otherwise than the replay reads them"
        fn(**args)
        return recorder
    if fold is not None:

        def apply(self: Any, *rest: Any) -> Any:
            return recorder.wrap("fold", fold.__get__(self))(*rest)

        folding.apply = apply

    def __init__(self: Any, *rest: Any, **named: Any) -> None:
        init(self, *rest, **named)
        recorder.made(self)

    def read(self: Any) -> Any:
        recorder.read(self)
        return self.__dict__["data"]

    def write(self: Any, value: Any) -> None:
        self.__dict__["data"] = value

    handle_class.__init__ = __init__
    handle_class.data = property(read, write)
    try:
        with shadowing(builder, {name: recorder.wrap(name, getattr(builder, name)) for name in names}):
            fn(**args)
    finally:
        del handle_class.data
        handle_class.__init__ = init
        if fold is not None:
            folding.apply = fold
    return recorder


class _Programs:
    """Stands for the kernel in the interpreter's loop (GridExecutor.__call__ calls ``self.fn(**args)`` once a
    program, after set_grid_idx): the first program recorded, each later one replayed or, where the record cannot
    stand for it, interpreted."""

    def __init__(self, fn: Any, builder: Any) -> None:
        self.fn, self.builder = fn, builder
        self.steps: list[tuple[int, Any, Any, Any, bool]] | None = None  # the varying steps, each with its index
        self.ahead: list[tuple[int, Any, Any, Any, bool]] = []  # those the guards need, taken out of steps
        self.first: list[Any] = []  # what each step returned in the first program
        self.guards: list[tuple[_Ref, Any]] = []  # the varying values Python read, with what the first program read
        self.interpreted = 0  # later programs whose reads differed, run in the interpreter
        self.why_not: str | None = None

    def __call__(self, **args: Any) -> None:
        if self.steps is None and self.why_not is None:
            self._record(args)
            return
        if self.why_not is not None:
            self.fn(**args)
            return
        values = list(self.first)
        try:
            if not self._guarded(values):
                self.interpreted += 1
                self.fn(**args)
                return
            for index, method, step_args, kwargs, held in self.steps or ():
                values[index] = _call(method, step_args, kwargs, held, values)
        except Exception as replayed:
            # the interpreter runs this program again, for its own error and traceback in the kernel's source
            self.fn(**args)
            raise replayed

    def _record(self, args: dict[str, Any]) -> None:
        recorder = _recorded(self.fn, args, self.builder)
        steps, varies = _varying(recorder.steps)
        self.guards = [(ref, data) for ref, data in recorder.reads if varies[ref.index]]
        ahead = _ahead(recorder.steps, [ref.index for ref, _ in self.guards])
        self.why_not = recorder.why_not or (READ if ahead is None else None)
        if self.why_not is not None:
            self.steps = []
            return
        needed = set(ahead or ())
        self.ahead = [step for step in steps if step[0] in needed]
        self.steps = [step for step in steps if step[0] not in needed]
        self.first = recorder.outputs

    def _guarded(self, values: list[Any]) -> bool:
        """Whether this program's Python reads what the first one's read, so it makes the same steps: the steps
        those reads come from (pure, and program ids: no memory) computed first, their values compared bit for bit."""
        for index, method, args, kwargs, held in self.ahead:
            values[index] = _call(method, args, kwargs, held, values)
        for ref, data in self.guards:
            found = _resolve(ref, values).data
            if found.dtype != data.dtype or found.shape != data.shape or found.tobytes() != data.tobytes():
                return False
        return True


def _call(method: Any, args: Any, kwargs: Any, held: bool, values: list[Any]) -> Any:
    if not held:
        return method(*args, **kwargs)
    return method(*[_resolve(a, values) for a in args], **{k: _resolve(v, values) for k, v in kwargs.items()})


def _ahead(steps: list[tuple[str, Any, Any, Any, bool]], wanted: list[int]) -> list[int] | None:
    """The steps the values Python read come from, in order, where none touches memory or has an effect (program
    ids and pure steps: a later program computes them before making any other step); None where one does."""
    needed: set[int] = set()
    stack = list(wanted)
    while stack:
        index = stack.pop()
        if index in needed:
            continue
        name, _, args, kwargs, _ = steps[index]
        if any(word in name for word in VARYING) and "program_id" not in name:
            return None
        needed.add(index)
        stack += _refs([*args, *kwargs.values()])
    return sorted(needed)


def _varying(steps: list[tuple[str, Any, Any, Any, bool]]) -> tuple[list[tuple[int, Any, Any, Any, bool]], list[bool]]:
    """The steps a later program makes again (those VARYING names, and those reading a result of one), and for each
    step whether it is one."""
    varies: list[bool] = []
    kept = []
    for index, (name, method, args, kwargs, held) in enumerate(steps):
        reads = held and any(varies[ref] for ref in _refs([*args, *kwargs.values()]))
        varies.append(reads or any(word in name for word in VARYING))
        if varies[-1]:
            kept.append((index, method, args, kwargs, held))
    return kept, varies


def _refs(templates: list[Any]) -> list[int]:
    found: list[int] = []
    for template in templates:
        if type(template) is _Ref:
            found.append(template.index)
        elif type(template) is _Tensor:
            found.append(template.handle.index)
        elif type(template) is _Many:
            found += _refs(template.items)
    return found


def _replaying(original: Any) -> Any:
    """GridExecutor.__call__ with the kernel stood for by _Programs once the loop starts (the first set_grid_idx: the
    call has read the kernel's signature and globals by then), and the kernel put back after."""

    @wraps_original(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        from triton.runtime import interpreter

        builder = getattr(interpreter, "interpreter_builder", None)
        fn = getattr(self, "fn", None)
        if builder is None or fn is None or not callable(getattr(builder, "set_grid_idx", None)):
            return original(self, *args, **kwargs)
        programs = _Programs(fn, builder)
        set_idx = builder.set_grid_idx

        def set_grid_idx(x: int, y: int, z: int) -> None:
            self.fn = programs
            set_idx(x, y, z)

        try:
            with shadowing(builder, {"set_grid_idx": set_grid_idx}):
                return original(self, *args, **kwargs)
        finally:
            self.fn = fn
            if programs.steps is not None:
                if programs.why_not is None:
                    COUNTS["replayed"] += 1
                    COUNTS["programs interpreted"] += programs.interpreted
                else:
                    COUNTS["interpreted"] += 1
                    REASONS[programs.why_not] = REASONS.get(programs.why_not, 0) + 1

    return __call__


REPLAY_RECORD = Patch(
    id="execute-replay",
    layer="capture",
    why="Triton's interpreter runs every program of a launch through triton.language's type checks, broadcasts and "
    "block types again, ~40 us an operation for a few microseconds of NumPy; a launch's later programs make the "
    "builder calls its first made, with their own program ids, where no Python flow read a computed value",
    upstream="triton.runtime.interpreter (GridExecutor.__call__, InterpreterBuilder)",
    remove_when="Triton's interpreter compiles a kernel once a launch rather than interpreting each program",
    changes=(Change("triton.runtime.interpreter:GridExecutor.__call__", _replaying),),
)

__all__ = ["COUNTS", "REASONS", "REPLAY_RECORD"]
