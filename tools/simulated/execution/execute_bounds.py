"""`codegen --execute`'s memory check: every element a kernel loads, stores or updates atomically in Triton's
interpreter must lie inside a tensor the launch gave it; one outside is the kernel's error, named with the tensor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original


class OutOfBounds(Exception):
    """A kernel's load, store or atomic reached memory outside every tensor its launch was given."""


@dataclass(frozen=True)
class Region:
    name: str  # the kernel's parameter (in_ptr0, out_ptr1, ...)
    start: int  # the first byte of the argument's storage, as the interpreter holds it
    end: int  # one past its last byte


_REGIONS: list[Region] = []  # the current launch's tensors (a launch is one GridExecutor call: never nested)


def _recording(original: Any) -> Any:
    # GridExecutor._init_args_hst(self, args_dev, kwargs) -> (args_hst, kwargs_hst): the host copies the kernel runs
    # on, positional ones in the order of self.arg_names (Triton 3.3 to 3.7 runtime/interpreter.py)
    @wraps_original(original)
    def _init_args_hst(self: Any, *args: Any, **kwargs: Any) -> Any:
        hosted = original(self, *args, **kwargs)
        positional, named = hosted
        pairs = [*zip(getattr(self, "arg_names", []), positional, strict=False), *dict(named).items()]
        _REGIONS[:] = [region for name, value in pairs if (region := _region(name, value)) is not None]
        return hosted

    return _init_args_hst


def _region(name: str, value: Any) -> Region | None:
    """The tensor ``value`` as the interpreter copies it to the host for the launch (GridExecutor._init_args_hst: each
    argument's whole storage), so a view may reach anywhere in its storage, as on the device."""
    storage = getattr(value, "untyped_storage", None)
    if storage is None or not callable(storage):
        return None
    held = storage()
    return Region(str(name), held.data_ptr(), held.data_ptr() + held.nbytes())


def outside(ptrs: Any, mask: Any, what: str) -> None:
    """Raise OutOfBounds when an active lane of ``ptrs`` (a TensorHandle of addresses; ``mask`` one of bools or
    None) addresses an element not wholly inside one of the launch's tensors."""
    import numpy as np
    import triton.language as tl

    if not _REGIONS:
        return
    addresses = np.asarray(ptrs.data).astype(np.uint64)
    active = addresses if mask is None else addresses[np.broadcast_to(np.asarray(mask.data, bool), addresses.shape)]
    if not active.size:
        return
    element = ptrs.get_element_ty()
    size = 1 if element == tl.int1 else max(element.primitive_bitwidth // 8, 1)
    inside = np.zeros(active.shape, dtype=bool)
    for region in _REGIONS:
        inside |= (active >= region.start) & (active + size <= region.end)
    if inside.all():
        return
    stray = int(active[~inside][0])
    nearest = min(_REGIONS, key=lambda region: _distance(stray, size, region))
    raise OutOfBounds(
        f"{what} of {int((~inside).sum())} of {active.size} active element(s) outside every tensor the kernel was "
        f"given: the first is element {(stray - nearest.start) // size} of {nearest.name}, which holds "
        f"{(nearest.end - nearest.start) // size}; on the device that reaches another tensor's memory, or faults"
    )


def _distance(address: int, size: int, region: Region) -> int:
    return region.start - address if address < region.start else address + size - region.end


def _checked_load(original: Any) -> Any:
    # create_masked_load(self, ptrs, mask, other, ...): create_load calls it with an all-true mask
    @wraps_original(original)
    def create_masked_load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        outside(ptrs, mask, "a load")
        return original(self, ptrs, mask, *args, **kwargs)

    return create_masked_load


def _checked_store(original: Any) -> Any:
    # create_masked_store(self, ptrs, value, mask, ...): create_store calls it with an all-true mask
    @wraps_original(original)
    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        outside(ptrs, mask, "a store")
        return original(self, ptrs, value, mask, *args, **kwargs)

    return create_masked_store


def _checked_atomic(original: Any) -> Any:
    # create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope)
    @wraps_original(original)
    def create_atomic_rmw(self: Any, rmwOp: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        outside(ptr, mask, "an atomic update")
        return original(self, rmwOp, ptr, val, mask, *args, **kwargs)

    return create_atomic_rmw


def _checked_compare_swap(original: Any) -> Any:
    # create_atomic_cas(self, ptr, cmp, val, sem, scope): every lane
    @wraps_original(original)
    def create_atomic_cas(self: Any, ptr: Any, *args: Any, **kwargs: Any) -> Any:
        outside(ptr, None, "an atomic compare-and-swap")
        return original(self, ptr, *args, **kwargs)

    return create_atomic_cas


# On an NPU a read past the end of a tensor returns whatever lies there or faults; in Triton's interpreter it reads
# host memory (runtime/interpreter.py: _interpreter.load/store on raw addresses), so a dropped mask whose lanes are
# later discarded by tl.where computes the right values and shows nothing. This check makes it show.
BOUNDS_RECORD = Patch(
    id="execute-memory-bounds",
    layer="capture",
    why="a kernel's access outside its tensors is wrong code that Triton's interpreter runs silently on host memory",
    upstream="triton.runtime.interpreter (GridExecutor, InterpreterBuilder memory ops)",
    remove_when="never: this is the codegen command's execution",
    changes=(
        Change("triton.runtime.interpreter:GridExecutor._init_args_hst", _recording),
        Change("triton.runtime.interpreter:InterpreterBuilder.create_masked_load", _checked_load),
        Change("triton.runtime.interpreter:InterpreterBuilder.create_masked_store", _checked_store),
        Change("triton.runtime.interpreter:InterpreterBuilder.create_atomic_rmw", _checked_atomic),
        Change("triton.runtime.interpreter:InterpreterBuilder.create_atomic_cas", _checked_compare_swap),
    ),
)

__all__ = ["BOUNDS_RECORD", "OutOfBounds", "Region", "outside"]
