"""What the layer families share: the device name, the torch_npu PR they follow, Inductor's backend registries,
and one wrapper object per original for names bound in several modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEVICE = "npu"
PR_40264 = "torch_npu PR 40264 (ascendc backend support for aclgraph capture/replay), torch_npu/_inductor/__init__.py"

CODEGEN_COMMON = "torch._inductor.codegen.common"
# Registries upstream's register_backend_for_device writes (the last two exist from torch 2.9).
BACKEND_REGISTRIES = (
    f"{CODEGEN_COMMON}:device_codegens",
    f"{CODEGEN_COMMON}:custom_backend_passes",
    f"{CODEGEN_COMMON}:custom_backend_codegen_configs",
)


def same_wrapper_for_every_consumer(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """One wrapper object per original, so torch.utils._triton.has_triton and every consumer's name stay `is`-equal."""
    made: dict[int, tuple[Any, Any]] = {}

    def replacement(old: Any) -> Any:
        key = id(old)
        if key not in made or made[key][0] is not old:
            made[key] = (old, make(old))
        return made[key][1]

    return replacement
