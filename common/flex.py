"""Flex attention helpers shared by every torch line, and the flex fix every line from 2.9 needs.

Inductor's flex kernels pick block sizes and split counts from ``torch.cuda``'s device properties whatever the device
(torch 2.7/2.8: the forward/backward/decoding configs; 2.9 and newer: flex decoding's split count). On an NPU host
there is no CUDA to ask, and for an NPU the answer must describe the NPU: while such a config is computed for a
non-CUDA device, ``torch.cuda``'s two property queries answer from that device's dynamo interface.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original


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


@contextlib.contextmanager
def cuda_queries_answered_by(device_type: str) -> Iterator[None]:
    """While active, torch.cuda.get_device_capability / get_device_properties answer for ``device_type``.

    torch 2.7's flex configs ask CUDA for the compute capability and SM count whatever the device; for another
    device they must describe that device (and on an NPU host there is no CUDA to ask at all).
    """
    import torch
    from torch._dynamo.device_interface import get_interface_for_device

    properties = get_interface_for_device(device_type).Worker.get_device_properties

    def get_device_properties(device: Any = None) -> Any:
        return properties()

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        found = properties()
        return (int(found.major), int(found.minor))

    saved = (torch.cuda.get_device_capability, torch.cuda.get_device_properties)
    torch.cuda.get_device_capability, torch.cuda.get_device_properties = get_device_capability, get_device_properties
    try:
        yield
    finally:
        torch.cuda.get_device_capability, torch.cuda.get_device_properties = saved


def _device_type(node: Any) -> str:
    device = node.get_device()
    return str(getattr(device, "type", device))


def asking_the_device(original: Any) -> Any:
    @wraps_original(original)
    def config_for(node: Any, *args: Any, **kwargs: Any) -> Any:
        device_type = _device_type(node)
        if device_type in ("cuda", "cpu"):
            return original(node, *args, **kwargs)
        with cuda_queries_answered_by(device_type):
            return original(node, *args, **kwargs)

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


DECODING_SPLIT_FROM_DEVICE = Patch(
    id="flex-decoding-split-from-device",
    layer="fix",
    why=(
        "flex decoding (short queries) sizes its split from torch.cuda's SM count for every device: lowering it "
        "for an NPU fails where there is no CUDA"
    ),
    upstream="torch >= 2.9 kernel/flex/flex_decoding.py get_split_k",
    remove_when="upstream asks the device's own interface for the SM count",
    lines=("v2_9", "v2_12"),
    # flex_attention imported create_flex_decoding_kernel by name: that is the name its lowering looks up
    changes=(Change(f"{FLEX_PACKAGE}.flex_attention:create_flex_decoding_kernel", asking_the_device),),
    upstream_has_fix=lambda: not decoding_asks_cuda(),
)
