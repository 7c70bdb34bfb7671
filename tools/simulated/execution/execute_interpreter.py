"""Triton's interpreter made able to run what Inductor generates on this machine's Triton and NumPy: gaps of older
interpreters filled as later Triton releases fill them, and libdevice (and triton-ascend's tl.math) run by torch."""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original


def turn_on() -> None:
    """TRITON_INTERPRET=1 for this process and the script's: Triton decides when a function is decorated whether
    it is interpreted, triton.language's own (tl.sum's combine function) included, so it is set before Triton loads.
    The kernel checks' workers, which compile, run without it (triton_ascend_site.worker_env)."""
    os.environ["TRITON_INTERPRET"] = "1"


def not_ready() -> str | None:
    """Why Triton's interpreter cannot run Inductor's kernels in this process, or None."""
    import triton.language as tl

    if type(getattr(tl.standard, "sum", None)).__name__ != "InterpretedFunction":
        return (
            "Triton was imported before TRITON_INTERPRET=1 was set, so triton.language's own functions are "
            "compiled-only; run codegen --execute as its own command (it sets TRITON_INTERPRET before Triton loads)"
        )
    return None


# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: torch 2.12 comes with Triton 3.7, which squeezes first
def _index_squeezed(original: Any) -> Any:
    # Triton 3.4-3.6 turn a tensor into a Python index with int() of its 1-element array, which NumPy 2.4 refuses
    # (a kernel's `range(x0_offset, ...)`); Triton 3.7 squeezes it first (runtime/interpreter.py _patch_lang_tensor).
    @wraps_original(original)
    def _patch_lang_tensor(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(tensor, *args, **kwargs)

        def index(self: Any) -> int:
            return int(self.handle.data.squeeze())

        scope = args[0] if args else kwargs.get("scope")
        if scope is not None:
            scope.set_attr(tensor, "__index__", index)
        else:
            tensor.__index__ = index
        return result

    return _patch_lang_tensor


# CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: torch 2.8 comes with Triton 3.4, whose builder has it
def _int1_type(original: Any) -> Any:
    # Triton 3.3's InterpreterBuilder has no get_int1_ty, which torch 2.7.1's promote_to_tensor reaches
    # (tl.zeros((1,), tl.int1)); later releases return tl.int1 (runtime/interpreter.py): as they do.
    from npu_inductor_compat.patching import ABSENT

    if original is not ABSENT:
        return original

    def get_int1_ty(self: Any) -> Any:
        import triton.language as tl

        return tl.int1

    return get_int1_ty


# CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: Triton 3.4's builder makes the all-ones boolean itself
def _all_ones_bool(original: Any) -> Any:
    # Triton 3.3's InterpreterBuilder.get_all_ones_value takes integers only; `~mask` (Inductor's index assert on torch
    # 2.7.1: `tl.device_assert(... | ~(xmask))`) inverts an int1 through it. Later releases give True for a boolean
    # (runtime/interpreter.py): as they do.
    @wraps_original(original)
    def get_all_ones_value(self: Any, type: Any) -> Any:
        import numpy as np
        from triton.runtime.interpreter import TensorHandle, _get_np_dtype

        if _get_np_dtype(type) == np.bool_:
            return TensorHandle(np.full(1, True, dtype=np.bool_), type.scalar)
        return original(self, type)

    return get_all_ones_value


def _no_driver_needed(original: Any) -> Any:
    # A kernel module starts with triton_helpers.set_driver_to_gpu(), which raises "Could not find an active GPU
    # backend" where no GPU driver is active (torch/_inductor/runtime/triton_helpers.py): the interpreter needs none.
    @wraps_original(original)
    def set_driver_to_gpu() -> Any:
        if os.environ.get("TRITON_INTERPRET") == "1":
            return None
        return original()

    return set_driver_to_gpu


def _any_range(original: Any) -> Any:
    # Every npu kernel is compiled by triton-ascend, whose arange takes any range up to TRITON_MAX_TENSOR_NUMEL
    # (triton-ascend 3.2.0 triton/triton_patch/language/semantic.py arange, set over language.semantic.arange by
    # triton/testing.py); torch_npu's kernels use such blocks (R1BLOCK_SUB=40). Triton's own arange refuses a range
    # that is not a power of 2: that one check is lifted, as triton-ascend does; anything else is Triton's own.
    @wraps_original(original)
    def arange(*args: Any, **kwargs: Any) -> Any:
        import triton.language as tl

        method = not isinstance(args[0], int)  # Triton 3.4 on: TritonSemantic.arange(self, start, end, *, ret_ty)
        start, end = (args[1], args[2]) if method else (args[0], args[1])
        span = end - start if isinstance(start, int) and isinstance(end, int) else 0
        if span <= 0 or span & (span - 1) == 0 or span > tl.TRITON_MAX_TENSOR_NUMEL or kwargs.get("ret_ty"):
            return original(*args, **kwargs)
        shape = tl.block_type(tl.int32, [span])
        if not method:  # Triton 3.3: arange(start, end, builder)
            builder = args[2] if len(args) > 2 else kwargs["builder"]
            return tl.tensor(builder.create_make_range(start, end), shape)
        semantic = args[0]
        make = getattr(semantic, "make_tensor", None) or semantic.tensor
        return make(semantic.builder.create_make_range(shape.to_ir(semantic.builder), start, end), shape)

    return arange


def _any_block_shape(original: Any) -> Any:
    # triton-ascend's validate_block_shape (3.2.0 triton/language/_utils.py) checks each dimension is an int and the
    # numel fits, with no power-of-2 rule; Triton's refuses "Shape element i must be a power of 2". As triton-ascend.
    @wraps_original(original)
    def validate_block_shape(shape: Any, *args: Any, **kwargs: Any) -> Any:
        import triton.language as tl

        numel = 1
        for size in shape:
            if not isinstance(size, int):
                return original(shape, *args, **kwargs)  # Triton's own message for a non-int dimension
            numel *= size
        if numel > tl.TRITON_MAX_TENSOR_NUMEL:
            return original(shape, *args, **kwargs)
        return numel

    return validate_block_shape


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: torch 2.15 comes with Triton 3.9, which reads the mask right
def _dense_atomics(original: Any) -> Any:
    # create_broadcast makes a NumPy broadcast view (strides of 0: np.broadcast_to), and create_atomic_rmw hands
    # ptr, val and mask to the C++ atomic_rmw as they are (runtime/interpreter.py), which in Triton 3.3 to 3.8 then
    # reads a broadcast mask wrongly: GPT-2's embedding backward, an atomic_add of [1, R0_BLOCK] values under a
    # [1, 1] row mask, added only column 0 (3.9 adds them all). Each operand is made dense first, same values.
    @wraps_original(original)
    def create_atomic_rmw(self: Any, rmwOp: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        return original(self, rmwOp, _dense(ptr), _dense(val), _dense(mask), *args, **kwargs)

    return create_atomic_rmw


def _nan_argument(original: Any) -> Any:
    # triton-ascend's tl.max takes propagate_nan (3.2.0 triton/triton_patch/language/standard.py max, set over
    # triton.language.max by triton/testing.py): True reduces with maximum(..., propagate_nan=ALL), so a NaN wins.
    # torch_npu's max reductions pass it (codegen/triton.py final_reduction: tl.max(v, dim, propagate_nan=True)), as
    # torch's max propagates NaN; Triton's tl.max takes none, and its interpreter ignores NaN from 3.4 on
    # (runtime/interpreter.py ReduceOps: np.nanmax; 3.3's np.max kept them). As triton-ascend: NaN wins where asked.
    # Importers that re-wrap tl.max's Python function (Triton 3.5's gluon: jit(tl.standard.max.fn)) find it as
    # ``fn``, as on a JIT function.
    @wraps_original(original)
    def max(input: Any, axis: Any = None, *args: Any, propagate_nan: Any = False, **kwargs: Any) -> Any:
        result = original(input, axis, *args, **kwargs)
        indices = bool(_value(args[0] if args else kwargs.get("return_indices", False)))
        if not _value(propagate_nan) or indices:
            return result
        keep_dims = _value(args[2] if len(args) > 2 else kwargs.get("keep_dims", False))
        return _nan_where_any(input, result, _value(axis), bool(keep_dims))

    if hasattr(original, "fn"):
        max.fn = original.fn  # type: ignore[attr-defined]
    return max


def _value(argument: Any) -> Any:
    return getattr(argument, "value", argument)  # a tl.constexpr, or the value itself


def _nan_where_any(input: Any, result: Any, axis: Any, keep_dims: bool) -> Any:
    """``result`` (a reduction of ``input`` over ``axis``) with NaN wherever the reduced elements held one."""
    import numpy as np
    import triton.language as tl

    data = np.asarray(input.handle.data)
    if not np.issubdtype(data.dtype, np.floating):
        return result
    nan = np.isnan(data).any(axis=axis, keepdims=keep_dims)
    if not nan.any():
        return result
    values = np.array(result.handle.data, copy=True)
    values[np.broadcast_to(nan, values.shape)] = np.nan
    return tl.core.tensor(type(result.handle)(values, result.handle.dtype), result.type)


# CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: Triton 3.4's apply returns a tuple for a tuple
def _tuple_for_a_tuple(original: Any) -> Any:
    # Triton 3.3's ReduceScanOpInterface.apply returns a scan's one output bare even for a one-tuple operand, which
    # torch 2.7.1's cumsum unpacks (`tmp15, = tl.associative_scan((tmp14,), 1, ...)`): 3.4 on return a tuple.
    @wraps_original(original)
    def apply(self: Any, input: Any) -> Any:
        result = original(self, input)
        if not isinstance(input, tuple):
            return result
        return tuple(result) if isinstance(result, list | tuple) else (result,)

    return apply


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: only _dense_atomics uses it
def _dense(handle: Any) -> Any:
    import numpy as np

    data = getattr(handle, "data", None)
    if not isinstance(data, np.ndarray) or data.flags.c_contiguous:
        return handle
    return type(handle)(np.ascontiguousarray(data), handle.dtype)


INTERPRETER_RECORD = Patch(
    id="execute-interpreter-gaps",
    layer="capture",
    why="Triton's interpreter runs Inductor's kernels on this machine's Triton and NumPy releases as later Triton "
    "releases run them, with triton-ascend's arange (any range, not only powers of 2)",
    upstream="triton.runtime.interpreter (_patch_lang_tensor before Triton 3.7, InterpreterBuilder before 3.4); "
    "torch._inductor.runtime.triton_helpers.set_driver_to_gpu",
    remove_when="each gap of Triton's interpreter goes with the torch lines that ship that Triton (its CAN REMOVE "
    "tag); triton-ascend's semantics and the driver never: this is the codegen command's execution",
    changes=(
        # CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: Triton 3.7 on
        Change("triton.runtime.interpreter:_patch_lang_tensor", _index_squeezed, optional=True),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: Triton 3.4 on
        Change("triton.runtime.interpreter:InterpreterBuilder.get_int1_ty", _int1_type, must_exist=False),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: Triton 3.4 on
        Change("triton.runtime.interpreter:InterpreterBuilder.get_all_ones_value", _all_ones_bool),
        Change("torch._inductor.runtime.triton_helpers:set_driver_to_gpu", _no_driver_needed, optional=True),
        Change("triton.language.semantic:arange", _any_range, optional=True),
        Change("triton.language.core:validate_block_shape", _any_block_shape, optional=True),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 8) [next]: Triton 3.4 on
        Change("triton.runtime.interpreter:ReduceScanOpInterface.apply", _tuple_for_a_tuple),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: Triton 3.9 on
        Change("triton.runtime.interpreter:InterpreterBuilder.create_atomic_rmw", _dense_atomics),
        Change("triton.language:max", _nan_argument),
        Change("triton.language.standard:max", _nan_argument),
        Change("triton.language.semantic:TritonSemantic.arange", _any_range, optional=True),
    ),
)


# torch_npu's triton_helpers star-imports torch's (`from torch._inductor.runtime.triton_helpers import *`), and the
# kernels of its fallback path call that copy (`from torch_npu._inductor.runtime import triton_helpers`): imported
# after INTERPRETER_RECORD it copies the patched function; imported before, its copy is patched by this record.
TORCH_NPU_HELPERS = "torch_npu._inductor.runtime.triton_helpers"
TORCH_NPU_DRIVER_RECORD = Patch(
    id="execute-torch-npu-driver",
    layer="capture",
    why="torch_npu's kernels call its own copy of set_driver_to_gpu, which needs no driver under the interpreter",
    upstream=f"{TORCH_NPU_HELPERS}.set_driver_to_gpu (torch's, star-imported)",
    remove_when="never: this is the codegen command's execution",
    changes=(Change(f"{TORCH_NPU_HELPERS}:set_driver_to_gpu", _no_driver_needed, optional=True),),
    patches_package="torch_npu",
)


def interpreter_records() -> list[Patch]:
    """The records that make Triton's interpreter run Inductor's kernels in this process: INTERPRETER_RECORD, and
    TORCH_NPU_DRIVER_RECORD where torch_npu's triton_helpers is already imported (never imported for it)."""
    import sys

    return [INTERPRETER_RECORD, *([TORCH_NPU_DRIVER_RECORD] if TORCH_NPU_HELPERS in sys.modules else [])]


class InterpreterLimit(Exception):
    """A kernel reached what Triton's interpreter cannot run: its launch is "not run", never a verdict on it."""


# libdevice functions the interpreter cannot run (it runs no extern) whose torch function of the same meaning runs
# them on the CPU instead: libdevice name -> torch function (torch.<name>, or torch.special.<name>). Only exact
# equivalents: libdevice.round rounds half away from zero, torch.round half to even, so round is not here.
TORCH_EQUIVALENTS = {
    **{name: name for name in ("tanh", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh")},
    **{name: name for name in ("log1p", "expm1", "lgamma", "erfinv", "atan2", "pow", "fmod", "hypot", "nextafter")},
    **{name: name for name in ("trunc", "signbit", "isinf", "isnan", "copysign")},
    "erfc": "special.erfc",  # (erf is triton.language.math's, which the interpreter runs)
    "nearbyint": "round",  # rounds to nearest, ties to even, as torch.round
    "rint": "round",
    **{name: name for name in ("reciprocal", "relu", "ldexp")},  # triton-ascend's libdevice has these
}
# What triton-ascend sets over triton.language.math from its libdevice (3.2.0 triton/testing.py: language.math.isnan
# = language.extra.ascend.libdevice.isnan, ...), which torch_npu's kernels call as tl_math.<name>; Triton's
# tl.math lacks some of them (tanh, pow, ...)
ASCEND_MATH = ("isnan", "isinf", "reciprocal", "log1p", "relu", "tan", "atan", "tanh", "ilogb", "ldexp", "pow")


class MathAsLibdevice:
    """Stands for ``libdevice`` in an interpreted kernel: the interpreter runs no extern function
    (InterpreterBuilder.create_extern_elementwise raises NotImplementedError, runtime/interpreter.py), so a name
    ``triton.language.math`` has (rsqrt, exp, ...) is that; one in TORCH_EQUIVALENTS is torch's function on the
    interpreter's arrays; any other raises InterpreterLimit."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def __getattr__(self, name: str) -> Any:
        import triton.language as tl

        found = getattr(tl.math, name, None)
        if found is not None:
            return found
        if name in TORCH_EQUIVALENTS:
            return _by_torch(name, TORCH_EQUIVALENTS[name])

        def extern(*args: Any, **kwargs: Any) -> Any:
            raise InterpreterLimit(
                f"libdevice.{name} is an extern function, which Triton's interpreter cannot run "
                f"(create_extern_elementwise), and neither triton.language.math nor torch has it"
            )

        return extern


class AscendMath:
    """Stands for ``triton.language.math`` in an interpreted kernel as triton-ascend extends it: Triton's own
    functions, and for a name in ASCEND_MATH that Triton's lacks, what MathAsLibdevice gives for it."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._original, name, None)
        if found is not None:
            return found
        if name in ASCEND_MATH:
            return getattr(MathAsLibdevice(None), name)
        raise AttributeError(f"module 'triton.language.math' has no attribute {name!r}")


def _by_torch(name: str, path: str) -> Any:
    def extern(*args: Any, **kwargs: Any) -> Any:
        import numpy as np
        import torch
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        function: Any = torch
        for part in path.split("."):
            function = getattr(function, part)
        tensors = [arg for arg in args if isinstance(arg, tl.tensor)]
        if not tensors:
            raise InterpreterLimit(f"libdevice.{name} was called with no tensor")
        values = [torch.from_numpy(np.asarray(arg.handle.data)) if isinstance(arg, tl.tensor) else arg for arg in args]
        result = function(*values).numpy()
        first = tensors[0]
        scalar = tl.int1 if result.dtype == np.bool_ else first.handle.get_element_ty()
        if result.dtype != np.bool_:
            result = result.astype(np.asarray(first.handle.data).dtype)
        shape = list(result.shape)
        return tl.tensor(TensorHandle(result, scalar), tl.block_type(scalar, shape) if shape else scalar)

    return extern


def limit_of(err: BaseException) -> str | None:
    """The InterpreterLimit behind ``err`` (the interpreter wraps a kernel's exception), as text, or None."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, InterpreterLimit):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


_INTERPRETED: dict[str, ModuleType] = {}  # a helper module's name -> its copy made under TRITON_INTERPRET


def interpreted_globals(function: Any) -> None:
    """The interpreted kernel ``function`` (a Python function) made able to run: ``libdevice`` is MathAsLibdevice,
    and each helper module it calls @triton.jit functions of (triton_helpers, torch_npu's) is a copy of that module
    executed under TRITON_INTERPRET, as the interpreter calls only interpreted functions."""
    scope = getattr(function, "__globals__", None)
    if scope is None:
        return
    _bind_libdevice(scope)
    for name, value in list(scope.items()):
        if isinstance(value, ModuleType) and not value.__name__.startswith("triton") and _has_jit(value):
            scope[name] = _interpreted(value)


def _has_jit(module: ModuleType) -> bool:
    from triton.runtime.jit import JITFunction

    return any(isinstance(value, JITFunction) for value in vars(module).values())


def _interpreted(module: ModuleType) -> ModuleType:
    found = _INTERPRETED.get(module.__name__)
    if found is None:
        location = getattr(module, "__file__", None)
        spec = importlib.util.spec_from_file_location(f"{module.__name__}", location) if location else None
        if spec is None or spec.loader is None:
            return module
        found = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(found)  # not put in sys.modules: the original stays what every importer sees
        _bind_libdevice(vars(found))
        _INTERPRETED[module.__name__] = found
    return found


def _bind_libdevice(scope: dict[str, Any]) -> None:
    import triton.language as tl

    current = scope.get("libdevice")
    if current is not None and not isinstance(current, MathAsLibdevice):
        scope["libdevice"] = MathAsLibdevice(current)
    for name, value in list(scope.items()):  # torch_npu's kernels: tl_math (triton.language.math, as triton-ascend's)
        if value is tl.math:
            scope[name] = AscendMath(value)
