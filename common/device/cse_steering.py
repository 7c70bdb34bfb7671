"""One kernel's CSE ``generate`` steered for the span of one codegen call, then put back as it was."""

# torch_npu's records that rewrite one statement of a load (torch_npu_load_order.py, torch_npu_constant_load.py)
# share this: the replacement is an instance attribute of that kernel's CSE only, so nested steering (two records
# wrapping the same load) composes, and the class's own generate is never touched.

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def generate_steered(cse: Any, steer: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    """``cse.generate`` is ``steer(the generate in place)`` inside the block; the CSE's own (or an outer steering)
    is back when the block ends or raises."""
    previous = cse.__dict__.get("generate")
    cse.generate = steer(cse.generate)
    try:
        yield
    finally:
        if previous is None:
            del cse.generate
        else:
            cse.generate = previous
