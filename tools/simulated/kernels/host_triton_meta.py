"""A kernel's ``triton_meta`` as torch writes it where triton-ascend 3.2 is the triton, for the triton-ascend
workers: the codegen process's triton (stock, 3.3 on) has torch write the newer form."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _indices(config: dict[Any, Any], name: str) -> list[int]:
    return sorted(key[0] for key, properties in config.items() if any(prop[0] == name for prop in properties))


def as_on_the_host(triton_meta: dict[str, Any], constexprs: Iterable[str]) -> bool:
    """Rewrite ``triton_meta`` in place into the form torch writes for the worker's triton (``constexprs``: the
    kernel's parameters declared ``tl.constexpr``); whether it changed (not where this triton takes the dict form).

    torch picks the form by the installed triton (torch/_inductor/utils.py triton_version_uses_attrs_dict). With the
    dict form (triton 3.3 on) codegen/triton_utils.py signature_of types equal-to-1 and None arguments "constexpr",
    codegen/triton.py add_constexpr_arg puts the BLOCK constexprs into the signature, and config_of's
    runtime/hints.py AttrsDescriptorWrapper keeps only divisibility. With triton-ascend 3.2's AttrsDescriptor
    (triton.backends.compiler) none of that: the argument keeps its integer type (an equal-to-1 argument "i32",
    signature_of's type for an int that fits), a None argument is "*i8", the BLOCK constexprs stay out, and
    config_of's AttrsDescriptor lists divisibility and equal_to_1. torch_npu's precompile passes all of it to
    triton.compile unchanged, and triton-ascend 3.2's code generator knows no "constexpr" type.
    """
    from torch._inductor.runtime.hints import AttrsDescriptorWrapper

    if isinstance(AttrsDescriptorWrapper([], []), dict):  # this triton takes the dict form
        return False
    signature: dict[str, str] = dict(triton_meta.get("signature") or {})
    constants: dict[str, Any] = triton_meta.get("constants") or {}
    configs = triton_meta.get("configs") or []
    if "constexpr" not in signature.values() and not any(isinstance(config, dict) for config in configs):
        return False
    declared = set(constexprs)
    host: dict[str, str] = {}
    equal_to_1: list[int] = []
    for name, kind in signature.items():
        if kind != "constexpr":
            host[name] = kind
        elif name in declared:
            continue  # a BLOCK constexpr (add_constexpr_arg): its value comes from the config
        elif name in constants and constants[name] is None:
            host[name] = "*i8"  # signature_of: `None` is nullptr, implicitly *i8
        else:  # signature_of's "constexpr" for an argument equal to 1
            equal_to_1.append(len(host))
            host[name] = "i32"
    triton_meta["signature"] = host
    triton_meta["configs"] = [
        AttrsDescriptorWrapper(_indices(config, "tt.divisibility"), equal_to_1) if isinstance(config, dict) else config
        for config in configs
    ]
    return True


def constexpr_names(fn: Any) -> list[str]:
    """The parameters a ``triton.jit`` function declares ``tl.constexpr`` (``fn.constexprs``: their indices)."""
    return [fn.arg_names[index] for index in getattr(fn, "constexprs", ())]
