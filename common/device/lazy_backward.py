"""An npu graph's backward compiles at its first .backward(), maybe after deactivate(): then a clear error, no
KeyError. The record wraps the ``inner_compile`` each npu compile hands AOTAutograd (the forward's and the backward's)
so that it compiles only while the package is active, holding the package lock like the forward's compile."""

from __future__ import annotations

import inspect
from typing import Any

from npu_inductor_compat.npu_graph import graph_uses_npu
from npu_inductor_compat.patching import Change, Patch, wraps_original

_GUARDED = "_npu_inductor_compat_needs_activation"  # copied by config.patch's functools.wraps: never wrapped twice


class CompiledAfterDeactivate(RuntimeError):
    """An npu graph compiled while the package was active has more to compile, and the package is no longer active."""


def _refusal(is_backward: bool) -> str:
    what = (
        "the backward of a graph compiled for npu while npu_inductor_compat was active (AOTAutograd compiles it at "
        "its first .backward())"
        if is_backward
        else "a graph for npu whose compile started while npu_inductor_compat was active"
    )
    return (
        f"Inductor is compiling {what}, but npu_inductor_compat.deactivate() has removed the NPU device and backend "
        "layers since, so Inductor cannot compile it for npu (stock Inductor fails with KeyError: 'npu'). Call "
        "npu_inductor_compat.activate() again before using functions compiled for npu, or deactivate() only once "
        "they are no longer used."
    )


def needs_activation(inner_compile: Any) -> Any:
    """``inner_compile`` that refuses, with :class:`CompiledAfterDeactivate`, to run while the package is inactive."""
    if getattr(inner_compile, _GUARDED, False):
        return inner_compile

    def compile_while_active(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        from npu_inductor_compat.state import STATE

        with STATE.lock:  # a deactivate() from another thread waits for this compile, as for the forward's
            if not STATE.active:
                raise CompiledAfterDeactivate(_refusal(bool(kwargs.get("is_backward"))))
            with STATE.compiling():
                return inner_compile(gm, example_inputs, *args, **kwargs)

    setattr(compile_while_active, _GUARDED, True)
    return compile_while_active


def _guard_npu_compiles(original: Any) -> Any:
    default_inner = inspect.signature(original).parameters["inner_compile"].default

    @wraps_original(original)
    def compile_fx(model_: Any, example_inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        if graph_uses_npu(model_, example_inputs_):
            if args:
                args = (needs_activation(args[0]), *args[1:])
            else:
                kwargs["inner_compile"] = needs_activation(kwargs.get("inner_compile", default_inner))
        return original(model_, example_inputs_, *args, **kwargs)

    return compile_fx


RECORD = Patch(
    id="npu-backward-needs-activation",
    layer="device",
    why=(
        "a backward compiled lazily after deactivate() would run stock Inductor on npu tensors: KeyError: 'npu' "
        "from device_op_overrides, naming neither the package nor what to do"
    ),
    upstream="none: torch_npu has no deactivation",
    remove_when="never while deactivate() exists and AOTAutograd compiles backwards lazily",
    changes=(Change("torch._inductor.compile_fx:compile_fx", _guard_npu_compiles),),
)
