"""Whether a graph Dynamo hands to Inductor is the NPU's: the one test the zero-touch hook and the per-compile
records share (a leaf: the autoload entry point imports it on every ``import torch``)."""

from __future__ import annotations

from typing import Any

DEVICE = "npu"


def _is_npu(value: Any) -> bool:
    device = getattr(value, "device", None)
    return getattr(device, "type", None) == DEVICE


def graph_uses_npu(model: Any, inputs: Any) -> bool:
    """Whether a graph reads or makes a tensor on "npu" (inputs, then node values)."""
    if any(_is_npu(value) for value in inputs or ()):
        return True
    graph = getattr(model, "graph", None)
    for node in getattr(graph, "nodes", ()):
        meta = getattr(node, "meta", {})
        if _is_npu(meta.get("example_value")) or _is_npu(meta.get("val")):
            return True
    return False
