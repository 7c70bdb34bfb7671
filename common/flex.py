"""Flex attention helpers shared by every torch line, and the flex fix the lines from 2.9 need (on 2.7/2.8 its probe
finds no flex/ package: not needed)."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from npu_inductor_compat.patching import Change, wraps_original


def import_after_lowering(name: str) -> ModuleType | None:
    """Import a flex kernel module, or None where this torch has none by that name.

    Importing one first thing hits a circular import in torch 2.7 (cpp_gemm_template); Inductor's lowering imports
    them in a working order.
    """
    importlib.import_module("torch._inductor.lowering")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


# The device whose interface answers torch.cuda's two property queries in this thread/context (None: CUDA's own).
_answering_for: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "npu_inductor_compat_cuda_queries_for", default=None
)


def _properties_of(device_type: str) -> Any:
    from torch._dynamo.device_interface import get_interface_for_device

    return get_interface_for_device(device_type).Worker.get_device_properties()


def _answering_properties(original: Any) -> Any:
    @wraps_original(original)
    def get_device_properties(*args: Any, **kwargs: Any) -> Any:
        device_type = _answering_for.get()
        if device_type is None:
            return original(*args, **kwargs)
        return _properties_of(device_type)

    return get_device_properties


def _answering_capability(original: Any) -> Any:
    @wraps_original(original)
    def get_device_capability(*args: Any, **kwargs: Any) -> tuple[int, int]:
        device_type = _answering_for.get()
        if device_type is None:
            return tuple(original(*args, **kwargs))  # type: ignore[return-value]
        found = _properties_of(device_type)
        if found.major is None:
            # torch_npu reports no CUDA compute capability (major/minor None: torch_npu/csrc/npu/Module.cpp,
            # _NPUDeviceProperties): (0, 0) sends CUDA-tuned config tables to their generic branch
            return (0, 0)
        return (int(found.major), int(found.minor or 0))

    return get_device_capability


# Part of every record that uses cuda_queries_answered_by: torch.cuda's two queries consult the scope first. They
# are installed (and undone) through the journal; the scope itself is a ContextVar, so a compile for another device
# in another thread, or CUDA code outside the scope, gets CUDA's own answers.
CUDA_QUERY_CHANGES = (
    Change("torch.cuda:get_device_properties", _answering_properties),
    Change("torch.cuda:get_device_capability", _answering_capability),
)


@contextlib.contextmanager
def cuda_queries_answered_by(device_type: str) -> Iterator[None]:
    """While active, in this thread or context only, torch.cuda.get_device_capability / get_device_properties answer
    for ``device_type`` (requires CUDA_QUERY_CHANGES applied: the record using this must include them).

    Inductor's flex kernels pick block sizes and split counts from ``torch.cuda``'s device properties (the compute
    capability and SM count) whatever the device (torch 2.7/2.8: the forward/backward/decoding configs; 2.9 and
    newer: flex decoding's split count). On an NPU host there is no CUDA to ask, and for another device (an NPU) the
    answer must describe that device: while such a config is computed for a non-CUDA device
    (:func:`asking_the_device`), ``torch.cuda``'s two property queries answer from that device's dynamo interface,
    in that thread only.
    """
    token = _answering_for.set(device_type)
    try:
        yield
    finally:
        _answering_for.reset(token)


def _device_type(node: Any) -> str:
    device = node.get_device()
    return str(getattr(device, "type", device))


def asking_the_device(original: Any) -> Any:
    # every call the original takes passes through; the node being lowered is its first argument
    @wraps_original(original)
    def config_for(*args: Any, **kwargs: Any) -> Any:
        node = args[0] if args else next(iter(kwargs.values()), None)
        device_type = None if node is None else _device_type(node)
        if device_type in (None, "cuda", "cpu"):
            return original(*args, **kwargs)
        with cuda_queries_answered_by(device_type):
            return original(*args, **kwargs)

    return config_for


FLEX_PACKAGE = "torch._inductor.kernel.flex"  # torch >= 2.9


def asks_cuda(module_name: str, function: str, query: str) -> bool:
    """Feature detection: this torch has ``module_name.function`` and it calls ``torch.cuda.<query>``."""
    module = import_after_lowering(module_name)
    found = getattr(module, function, None)
    return found is not None and query in found.__code__.co_names


def decoding_asks_cuda() -> bool:
    """True when this torch's flex decoding asks torch.cuda for the SM count (2.9 and newer, get_split_k)."""
    return asks_cuda(f"{FLEX_PACKAGE}.flex_decoding", "get_split_k", "get_device_properties")
