"""`codegen --execute`'s speed: Triton's interpreter doing the same work with less Python. triton.language patched
once a launch; overflow checks nobody asserts skipped; a generic reduction folded a step of its axis at a time."""

from __future__ import annotations

from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

# The language modules patched during the launch now running (None: no launch is running). A launch is one
# GridExecutor call, never nested; the interpreter runs one program at a time.
_PATCHED: list[set[int] | None] = [None]


_LANGS: dict[Any, frozenset[int]] = {}  # a device function -> the language modules its globals hold


def _langs(fn: Any) -> frozenset[int]:
    """The modules _patch_lang patches for ``fn``: triton.language and triton.language.core where its globals hold
    them (runtime/interpreter.py _patch_lang, Triton 3.3 to 3.7), read once a function (at its first call)."""
    import inspect

    import triton.language as tl

    found = _LANGS.get(fn)
    if found is None:
        modules = (tl, tl.core)
        found = frozenset(
            id(value) for value in fn.__globals__.values() if inspect.ismodule(value) and value in modules
        )
        _LANGS[fn] = found
    return found


def _launch_tracked(original: Any) -> Any:
    """A launch with its patched modules tracked, and without the overflow checks whose assertion is off.

    For each signed add, sub and mul under 64 bits, Triton's semantics compute the operation again in int64 and
    compare it with the type's bounds (binary_op_sanitize_overflow_impl, while the builder's options say
    ``sanitize_overflow``), only to hand the result to device_assert, which returns at once unless the options say
    ``debug`` (language/semantic.py, Triton 3.3 to 3.7). The interpreter's options are sanitize_overflow on, debug
    off (runtime/interpreter.py InterpreterOptions): half the time of an index-heavy kernel went on checks nobody
    reads. With debug off they are off for the launch; with debug on they stay.
    """
    from dataclasses import replace

    from triton.runtime import interpreter

    @wraps_original(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        builder = interpreter.interpreter_builder
        options = builder.options
        if not getattr(options, "debug", True) and getattr(options, "sanitize_overflow", False):
            builder.options = replace(options, sanitize_overflow=False)
        _PATCHED[0] = set()
        try:
            return original(self, *args, **kwargs)
        finally:
            _PATCHED[0] = None
            builder.options = options

    return __call__


def _patched_once(original: Any) -> Any:
    """_patch_lang(fn) skipped for a device function whose language modules the running launch already patched.

    The interpreter patches triton.language at each launch (GridExecutor.__call__) and again at each call of a
    device function (InterpretedFunction.__call__), each time walking every member of four modules and classes
    (inspect.getmembers). Inside a launch the second walk finds every builtin already wrapped and sets again what
    the first set (Triton 3.3-3.6 keep the patch for good; 3.7 restores it when the launch ends, not when the
    device function returns): it changes nothing. A generic reduction (Inductor's max, Welford, argmax) calls its
    combine function once per element, so that walk was most of the time ``--execute`` spent in kernels.
    """

    @wraps_original(original)
    def _patch_lang(fn: Any) -> Any:
        patched = _PATCHED[0]
        langs = _langs(fn)
        if patched is not None and langs and langs <= patched:
            return _unchanged()
        result = original(fn)
        if patched is not None:
            patched |= langs
        return result

    return _patch_lang


def _unchanged() -> Any:
    """What _patch_lang returns when it patched nothing: None before Triton 3.7, an empty scope from 3.7 on."""
    from triton.runtime import interpreter

    scope = getattr(interpreter, "_LangPatchScope", None)
    return scope() if scope is not None else None


_BLOCK_SAFE: dict[Any, bool] = {}  # a combine function -> whether it may run on blocks (see _block_safe)


def _block_safe(fn: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether the Python function ``fn`` run by the interpreter on blocks gives each position what it gives run on
    that position's scalars. The interpreter runs a device function as Python, where ``and``, ``or``, ``not``, a
    conditional expression, a loop or an ``if`` on a block's truth take the whole block as true (its __bool__ for
    anything but one element); so no such node, an ``if`` only on a dtype, and the same for each device function it
    calls. Inductor's max, min, Welford, any and product pass; its max with index (``a_isnan and not b_isnan``) not."""
    import ast

    known = _BLOCK_SAFE.get(fn)
    if known is not None:
        return known
    tree = source_tree(fn)
    if tree is None:
        return False
    scope = getattr(fn, "__globals__", {})
    safe = True
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp | ast.IfExp | ast.While | ast.For | ast.Assert):
            safe = False
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            safe = False
        elif isinstance(node, ast.If) and not _dtype_test(node.test, scope):
            safe = False
        elif isinstance(node, ast.Call) and (callee := device_function(node.func, scope)) is not None:
            safe = safe and callee not in seen and _block_safe(callee, seen | {fn})
    _BLOCK_SAFE[fn] = safe
    return safe


def source_tree(fn: Any) -> Any:
    """The syntax tree of a device function's Python source, or None where its source cannot be read."""
    import ast
    import inspect
    import textwrap

    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None


def device_function(node: Any, scope: dict[str, Any]) -> Any:
    """The Python function of the device function (a jit or interpreted function) ``node`` names, or None."""
    import ast

    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in scope:
        return None
    found = scope[node.id]
    for name in reversed(names):
        found = getattr(found, name, None)
    inner = getattr(found, "fn", None)
    return inner if callable(inner) and hasattr(inner, "__globals__") else None


def _dtype_test(test: Any, scope: dict[str, Any]) -> bool:
    """Whether an ``if`` test is a device function's call whose every return reads a dtype (``is_floating(a)``:
    ``promote_to_tensor(x).dtype.is_floating()``), the same for a block as for its elements."""
    import ast

    function = device_function(test.func, scope) if isinstance(test, ast.Call) else None
    tree = source_tree(function) if function is not None else None
    if tree is None:
        return False
    returns = [node.value for node in ast.walk(tree) if isinstance(node, ast.Return)]
    return bool(returns) and all(value is not None and _reads_a_dtype(value) for value in returns)


def _reads_a_dtype(node: Any) -> bool:
    import ast

    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _folded_along_the_axis(original: Any) -> Any:
    """ReduceOps.generic_reduce computing what it computes, a step of the reduced axis at a time.

    Triton's interpreter reduces with a combine function it has no NumPy form for (Inductor's max with NaNs, Welford,
    max with index, any) element by element: for each element of the block, the combine function on that element
    and the accumulator of its output position, in index order, the accumulator held in an array of the input's
    dtype (runtime/interpreter.py ReduceOps.generic_reduce, the same from Triton 3.3 to 3.9). Here the same fold,
    in the same order for each output position, runs on all output positions at once, for a combine function that
    computes on a block what it computes on each element (_block_safe); any other keeps the element-wise fold.
    """

    @wraps_original(original)
    def generic_reduce(self: Any, input: Any) -> Any:
        import numpy as np
        import triton.language as tl

        tensors, axis = self.unravel(input, self.axis)
        arrays = [tensor.handle.data for tensor in tensors]
        length = arrays[0].shape[axis]
        if length == 0 or not _block_safe(self.combine_fn.fn):
            return original(self, input)
        dtypes = [tensor.dtype for tensor in tensors]
        # the accumulators, one per operand, in the input's NumPy dtype (the fold stores each result into them)
        held = [np.array(np.take(array, 0, axis=axis)) for array in arrays]
        shape = held[0].shape
        for step in range(1, length):
            accumulated = [self.to_tensor(value, dtype) for value, dtype in zip(held, dtypes, strict=True)]
            element = [self.to_tensor(np.take(a, step, axis=axis), d) for a, d in zip(arrays, dtypes, strict=True)]
            result = self.combine_fn.fn(*accumulated, *element)
            results = result if isinstance(result, tuple) else (result,)
            for index, value in enumerate(results):
                data = value.handle.data if isinstance(value, tl.core.tensor) else value
                held[index] = np.asarray(data).reshape(shape).astype(held[index].dtype)
        packed = []
        for value, dtype in zip(held, dtypes, strict=True):
            if self.keep_dims:
                value = np.expand_dims(value, axis) if self.axis is not None else value.reshape((1,) * arrays[0].ndim)
            elif self.axis is None:
                value = value.item()
            packed.append(self.to_tensor(value, dtype))
        # CAN REMOVE when MIN_SUPPORTED >= (2, 8) [block]: Triton 3.4 on return the list (their apply makes the tuple)
        if not _returns_a_list():  # Triton 3.3's apply passes on one tensor or a tuple
            return packed[0] if len(packed) == 1 else tuple(packed)
        # END CAN REMOVE
        return packed

    return generic_reduce


# CAN REMOVE when MIN_SUPPORTED >= (2, 8) [block]: Triton 3.4 on return the list
_RETURNS_A_LIST: list[bool] = []  # read once


def _returns_a_list() -> bool:
    if not _RETURNS_A_LIST:
        from importlib.metadata import version

        from packaging.version import Version

        _RETURNS_A_LIST.append(Version(version("triton")) >= Version("3.4"))
    return _RETURNS_A_LIST[0]


# END CAN REMOVE


SPEED_RECORD = Patch(
    id="execute-interpreter-speed",
    layer="capture",
    why="Triton's interpreter re-patches triton.language at every device-function call (a walk over every member of "
    "four modules that changes nothing inside a launch), computes an overflow check for every 32-bit add, sub and "
    "mul that its device_assert then drops (debug is off), and runs a generic reduction element by element: the "
    "same results with the patch once a launch, no unasserted checks and the fold vectorised across positions",
    upstream="triton.runtime.interpreter (_patch_lang, GridExecutor.__call__, ReduceOps.generic_reduce)",
    remove_when="Triton's interpreter patches once a launch, skips checks it will not assert and vectorises its "
    "generic reduction itself",
    changes=(
        Change("triton.runtime.interpreter:GridExecutor.__call__", _launch_tracked),
        Change("triton.runtime.interpreter:_patch_lang", _patched_once),
        Change("triton.runtime.interpreter:ReduceOps.generic_reduce", _folded_along_the_axis),
    ),
)

__all__ = ["SPEED_RECORD"]
