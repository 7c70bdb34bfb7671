"""Inductor's template heuristic registry (torch >= 2.9) and the GEMM template heuristics "npu" gets there."""

# Importing this module imports no torch module; the record's callables do, when applied.

from __future__ import annotations

import functools
import importlib
import sys
import types
from collections.abc import Callable, MutableMapping
from typing import Any

# Since torch 2.9 the GEMM lowerings ask a registry keyed by (template uid, device type, op name) for the configs of
# every Triton template they consider (``choices.py``: ``get_mm_configs`` in 2.9-2.11, ``get_ktc`` from 2.12, both
# calling ``get_template_heuristic``). Nothing registers "npu": each lookup logs an ERROR ("No template heuristic found
# - template_name=triton::bmm, device_type=npu ... Available: [the whole registry]. Using fallback", about 4 KB; 2.9.1
# ``template_heuristics/registry.py:113``, 2.12.1/2.13.0 ``template_heuristics/registry.py:99``, 2.14.1
# ``heuristics/registry.py:121``) and falls back to heuristics with no configs. ``bmm`` and ``baddbmm`` ask on every
# compile, max-autotune or not (2.14.1 ``kernel/bmm.py:230``:
# ``use_triton_template(layout, check_max_autotune=False)``); ``mm``/``addmm`` ask under max-autotune. Both only
# when Inductor considers Triton templates for the device at all:
# ``use_triton_template`` requires ``is_big_gpu`` (2.14.1 ``utils.py:1785-1811``, ``:1877-1890``: at least 68
# ``multi_processor_count``), which torch_npu sets to the vector core count (40 or 48 on Ascend 910B), so on today's
# SoCs the registry is not asked; a device or a torch that passes that check is.
DEVICE = "npu"
# The device whose template heuristics "npu" mirrors: the registrations torch makes for ``"mtia"``, the one Triton
# device without tuning of its own (``MTIAConfigHeuristic`` is an empty subclass of ``BaseConfigHeuristic``, 2.14.1
# ``heuristics/template/triton.py:2126``; its seven registrations at :3613-3669 exist unchanged from 2.9 to 2.15). Those
# are torch's template mixins over the generic Triton GEMM configs, the same configs CUDA's mm templates use
# (``CUDAConfigHeuristic`` overrides only flex attention, through ``torch.cuda.get_device_capability``), and what
# ``InductorChoices.get_config_heuristics`` already gives "npu" for flex and conv (``BaseConfigHeuristic`` for a device
# it does not know). Not CUDA's registrations: on a ROCm build they are ROCm's classes (``register=IS_ROCM``), and they
# add TMA, Blackwell and autoheuristic entries only NVIDIA GPUs reach. The GEMM mixins yield configs only under
# max-autotune (``GemmMaxAutotuneTemplateConfigHeuristics.should_run``), so a default compile still gets the ATen
# choice alone, as with the fallback; under max-autotune torch's Triton mm/bmm templates are autotuned for "npu".
GENERIC_DEVICE = "mtia"
# (template uid, op name) of every template heuristic torch registers for GENERIC_DEVICE (2.9.1 to 2.15.0).
TEMPLATES: tuple[tuple[str, str | None], ...] = (
    ("triton::mm", None),
    ("triton::bmm", None),
    ("triton::mm", "addmm"),
    ("triton::bmm", "baddbmm"),
    ("triton::mm", "scaled_mm"),
    ("triton::mm", "int_mm"),
    ("triton::mm_plus_mm", None),
)
# The registry's module from 2.9 (kept by 2.14 as an alias of heuristics/template/registry.py): the record's target
# on a line without a registry, where its probe says there is nothing to do and it is never applied.
FIRST_REGISTRY_MODULE = "torch._inductor.template_heuristics.registry"
REGISTRY = "_TEMPLATE_HEURISTIC_REGISTRY"
CACHE = "_HEURISTIC_CACHE"
# What a class body without definitions of its own holds.
_EMPTY_CLASS_ATTRS = frozenset(
    {"__module__", "__qualname__", "__doc__", "__firstlineno__", "__static_attributes__", "__dict__", "__weakref__"}
)


def registry_of(module: str) -> MutableMapping[Any, Any]:
    """The registry dict of ``module`` (importing it registers torch's own heuristics: its package imports them)."""
    registry: MutableMapping[Any, Any] = getattr(importlib.import_module(module), REGISTRY)
    return registry


def _agnostic(registry: MutableMapping[Any, Any], template: str, op: str | None) -> Any:
    """What upstream's lookup finds for a device with no entries of its own: (template, None, op), then
    (template, None, None) (``get_registered_heuristic_class``; 2.9.1 inlines it in ``get_template_heuristic``)."""
    return registry.get((template, None, op), registry.get((template, None, None)))


def registry_answers_npu(module: str) -> bool:
    """True when the registry already has heuristics for "npu": entries of its own (torch_npu's, or a future
    torch's), or device-agnostic ones for every template "npu" would otherwise fall back on.

    torch_npu 2.14.0 registers no template heuristic: its triton backend replaces the mm, addmm and bmm lowerings
    with its own templates and configs (``_inductor/kernel/mm.py`` ``_register_npu_inductor_mm``,
    ``kernel/bmm.py:245`` ``_register_npu_inductor_bmm``, called from ``_inductor/__init__.py``), which never ask the
    registry.
    """
    registry = registry_of(module)
    if any(isinstance(key, tuple) and len(key) > 1 and key[1] == DEVICE for key in registry):
        return True
    return all(_agnostic(registry, template, op) is not None for template, op in TEMPLATES)


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: 2.7 and 2.8 have no registry
def no_registry_on_this_line() -> bool:
    """Lines before 2.9 have no template heuristic registry (GEMM configs come from
    ``InductorChoices.get_config_heuristics``, generic for "npu"): there is nothing to register."""
    return True


def _check_generic(heuristic: type) -> None:
    """The mirrored class must get its configs from the generic ``BaseConfigHeuristic`` alone: a torch that gives
    the generic device tuning of its own makes this an error, rather than "npu" silently inheriting that tuning."""
    devices = [cls for cls in heuristic.__mro__ if any(b.__name__ == "BaseConfigHeuristic" for b in cls.__bases__)]
    tuned = [cls.__qualname__ for cls in devices if set(vars(cls)) - _EMPTY_CLASS_ATTRS]
    if not devices or tuned:
        why = f"{', '.join(tuned)} now tunes for {GENERIC_DEVICE}" if tuned else "it is not a BaseConfigHeuristic"
        raise RuntimeError(
            f"the {GENERIC_DEVICE!r} template heuristic {heuristic.__qualname__} is no longer torch's generic Triton "
            f"GEMM heuristic ({why}); the npu template heuristics must be re-checked against this torch"
        )


@functools.cache
def npu_heuristic(generic: type) -> type:
    """A subclass of the generic device's heuristic, named for "npu" (one per class, so undo and redo are exact)."""
    name = "Npu" + generic.__name__.removeprefix(GENERIC_DEVICE.upper())

    def body(namespace: dict[str, Any]) -> None:
        namespace["__module__"] = __name__
        namespace["__doc__"] = f"{generic.__qualname__}'s generic Triton GEMM configs, registered for {DEVICE!r}"

    return types.new_class(name, (generic,), {}, body)


def register_like_generic(module: str, template: str, op: str | None) -> Callable[[Any], None]:
    """The registration for one (template, op): the generic device's heuristic, registered for "npu" through
    upstream's ``register_template_heuristic``, unless a device-agnostic entry already answers it."""

    def register(register_template_heuristic: Any) -> None:
        registry = registry_of(module)
        if _agnostic(registry, template, op) is not None:
            return
        generic = registry.get((template, GENERIC_DEVICE, op))
        if not isinstance(generic, type):
            raise RuntimeError(
                f"torch registers no {GENERIC_DEVICE!r} template heuristic for template {template!r}, op {op!r}; "
                "the npu template heuristics must be re-checked against this torch"
            )
        _check_generic(generic)
        register_template_heuristic(template, DEVICE, op_name=op)(npu_heuristic(generic))

    return register


def forget_cached_npu_lookups(module: str) -> Callable[[], None]:
    """Refresh: drop the instances upstream cached for "npu" lookups of these templates (it caches every lookup
    that found a class), so none outlives the registration it came from."""
    stale = {(template, DEVICE) for template, _ in TEMPLATES}

    def refresh() -> None:
        cache = getattr(sys.modules.get(module), CACHE, None)
        if not isinstance(cache, MutableMapping):
            return
        for key in [key for key in cache if isinstance(key, tuple) and key[:2] in stale]:
            del cache[key]

    return refresh
