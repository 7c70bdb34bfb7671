"""Generated code as the codegen diff compares it: a Triton kernel split into its launch metadata (read with
``ast``, never evaluated) and its body, and a wrapper with each kernel definition collapsed to one line."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.capture import is_async_compile, kernel_definition
from npu_inductor_compat.tools.simulated.compare.diff_noise import normalise


@dataclass(frozen=True)
class Unevaluated:
    """An expression in the metadata that is not a literal (``ReductionHint.INNER``): compared by its text."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Construct:
    """A constructor call in the metadata (``DeviceProperties(type='npu', ...)``): compared argument by argument."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def __repr__(self) -> str:
        parts = [repr(arg) for arg in self.args] + [f"{key}={value!r}" for key, value in self.kwargs]
        return f"{self.name}({', '.join(parts)})"


def _value(node: ast.expr) -> Any:
    """A metadata expression as a Python value: literals, containers, ``set()``, constructor calls; anything else
    as its text (never evaluated)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _value(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Dict):
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**spread}
                return Unevaluated(ast.unparse(node))
            key = _value(key_node)
            result[key if _hashable(key) else repr(key)] = _value(value_node)
        return result
    if isinstance(node, ast.List):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(item) for item in node.elts)
    if isinstance(node, ast.Set):
        items = [_value(item) for item in node.elts]
        return frozenset(items) if all(map(_hashable, items)) else Unevaluated(ast.unparse(node))
    if isinstance(node, ast.Call) and not any(keyword.arg is None for keyword in node.keywords):
        name = ast.unparse(node.func)
        if name in ("set", "frozenset") and not node.args and not node.keywords:
            return frozenset()
        if isinstance(node.func, ast.Name | ast.Attribute):
            args = tuple(_value(arg) for arg in node.args)
            kwargs = tuple((str(keyword.arg), _value(keyword.value)) for keyword in node.keywords)
            return Construct(name, args, kwargs)
    return Unevaluated(ast.unparse(node))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@dataclass
class KernelSource:
    text: str  # normalised
    heuristic: str | None = None  # e.g. "triton_heuristics.pointwise"
    launch: dict[str, Any] | None = None  # None: not parsed (see note)
    body: str = ""  # the text with the decorator's arguments elided
    note: str | None = None


def _launch_decorator(function: ast.FunctionDef) -> ast.Call | None:
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            keyword.arg in ("triton_meta", "inductor_meta") for keyword in decorator.keywords
        ):
            return decorator
    return None


# What reading Python text with ast can raise besides SyntaxError: ValueError for a NUL (Python 3.11),
# RecursionError or MemoryError for deep nesting (in ast.parse, ast.unparse or _value).
UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def read_kernel(text: str) -> KernelSource:
    """Split a Triton kernel module (normalised) into its launch metadata, the arguments of its
    ``@triton_heuristics.<heuristic>(...)`` decorator (``triton_meta``: signature, constants, device properties,
    configs; ``inductor_meta``; ``size_hints``, ...) read with ``ast``, and its body: the rest of the module with
    those arguments elided. Text that does not parse, or holds no such decorator, is all body."""
    text = normalise(text)
    try:
        return _split_kernel(text)
    except UNPARSABLE as err:
        why = f"{err.msg}, line {err.lineno}" if isinstance(err, SyntaxError) else type(err).__name__
        return KernelSource(text, body=text, note=f"not parsed ({why}): compared as text")


def _split_kernel(text: str) -> KernelSource:
    tree = ast.parse(text)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for function in functions:
        call = _launch_decorator(function)
        if call is None or call.end_lineno is None:
            continue
        launch: dict[str, Any] = {f"args[{i}]": _value(arg) for i, arg in enumerate(call.args)}
        launch.update({str(keyword.arg): _value(keyword.value) for keyword in call.keywords})
        lines = text.splitlines()
        heuristic = ast.unparse(call.func)
        first, last = call.lineno - 1, call.end_lineno
        lines[first:last] = [lines[first][: _column(lines[first], call.col_offset)] + f"{heuristic}(...)"]
        return KernelSource(text, heuristic, launch, "\n".join(lines) + "\n")
    if any(_is_jit(function) for function in functions):
        return KernelSource(text, body=text, note="no launch decorator with triton_meta/inductor_meta found")
    return KernelSource(text, body=text)


def _is_jit(function: ast.FunctionDef) -> bool:
    return any(ast.unparse(decorator).endswith("jit") for decorator in function.decorator_list)


def _column(line: str, utf8_offset: int) -> int:
    """ast's column offsets count UTF-8 bytes."""
    return len(line.encode()[:utf8_offset].decode(errors="ignore"))


def fragment_source(fragment: str) -> str | None:
    try:
        return kernel_definition(fragment).source
    except UNPARSABLE:
        return None


def collapse_wrapper(text: str, cpp: str | None = None) -> str:
    """A Python wrapper with each kernel definition (and Inductor's comment block above it) on one line, and the
    C++ literal of a C++ wrapper's module replaced by a pointer to wrapper.cpp. Unparsable text is returned as is."""
    try:
        return _collapse(text, cpp)
    except UNPARSABLE:
        return text


def _collapse(text: str, cpp: str | None) -> str:
    tree = ast.parse(text)
    lines = text.splitlines()
    spans: list[tuple[int, int, str]] = []  # (first line, end line, replacement), 0-based, end exclusive
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.end_lineno is not None:
            value = node.value
            if isinstance(value, ast.Call) and is_async_compile(value.func):
                first = node.lineno - 1
                while first > 0 and lines[first - 1].lstrip().startswith("#"):
                    first -= 1
                targets = " = ".join(ast.unparse(target) for target in node.targets)
                method = value.func.attr if isinstance(value.func, ast.Attribute) else "?"
                spans.append(
                    (first, node.end_lineno, f"{targets} = async_compile.{method}(...)  # compared on its own")
                )
    for literal in ast.walk(tree):
        if (
            isinstance(literal, ast.Constant)
            and isinstance(literal.value, str)
            and literal.end_lineno is not None
            and literal.end_col_offset is not None
            and literal.end_lineno > literal.lineno
            and ((cpp is not None and cpp.strip() and cpp.strip() in literal.value) or "#include" in literal.value)
        ):
            first, last = literal.lineno - 1, literal.end_lineno - 1
            head = lines[first][: _column(lines[first], literal.col_offset)]
            tail = lines[last][_column(lines[last], literal.end_col_offset) :]
            spans.append((first, last + 1, f"{head}'''<the C++: wrapper.cpp>'''{tail}"))
    kept: list[tuple[int, int, str]] = []
    for span in sorted(spans):  # a span inside another (a literal inside a kernel definition) goes
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    for first, end, replacement in reversed(kept):
        lines[first:end] = [replacement]
    return "\n".join(lines) + "\n"
