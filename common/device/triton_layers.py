"""The Triton-family layer (triton, mlir, dvm: has_triton, GPU_TYPES, the C++-wrapper two-pass check, the cache key,
the benchmarker, the GEMM template heuristics) and the triton backend's registration, as journal records."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sys
import types
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.providers import DeviceProvider
from npu_inductor_compat.common.device import template_heuristics
from npu_inductor_compat.common.device.layer_shared import (
    BACKEND_REGISTRIES,
    CODEGEN_COMMON,
    DEVICE,
    PR_40264,
    same_wrapper_for_every_consumer,
)
from npu_inductor_compat.patching import Change, Patch, constant, wraps_original

# Modules that bound has_triton by name at import; the name they look up must be replaced too.
HAS_TRITON_CONSUMERS = (
    "torch._inductor.scheduler",
    "torch._inductor.compile_fx",
    "torch._dynamo.utils",
    "torch._inductor.runtime.autotune_cache",
    "torch._inductor.fx_passes.pad_mm",
    "torch._inductor.kernel.mm_grouped",  # torch >= 2.9
    "torch._higher_order_ops.triton_kernel_wrap",
)


def _npu_triton_ready() -> bool:
    from torch._dynamo.device_interface import get_interface_for_device
    from torch.utils._triton import has_triton_package

    try:
        return bool(has_triton_package() and get_interface_for_device(DEVICE).is_available())
    except NotImplementedError:  # no interface registered for "npu"
        return False


def _wrap_has_triton(original: Callable[..., bool]) -> Callable[..., bool]:
    if getattr(original, "_npu_inductor_compat", False):
        return original

    @wraps_original(original)
    @functools.cache
    def has_triton(*args: Any, **kwargs: Any) -> bool:
        return bool(original(*args, **kwargs)) or _npu_triton_ready()

    has_triton._npu_inductor_compat = True  # type: ignore[attr-defined]
    return has_triton


def _clear_gpu_type_cache() -> None:
    utils = sys.modules.get("torch._inductor.utils")
    if utils is not None and hasattr(utils.get_gpu_type, "cache_clear"):
        utils.get_gpu_type.cache_clear()


def _npu_is_gpu_type() -> bool:
    from torch._inductor import utils

    return DEVICE in utils.GPU_TYPES


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: from 2.15 the check asks the device
_TWO_PASS_DEVICES = ("cuda", "xpu")


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: from 2.15 the check asks the device
def _with_npu_in_two_pass_check(original: Any) -> Any:
    """Upstream's own codegen_with_cpp_wrapper with "npu" added to its hard-coded ("cuda", "xpu") device list.

    The list is a constant of the method's code object; replacing that one constant keeps upstream's two-pass logic
    (which differs per torch line) instead of copying it. A torch whose method no longer has the constant fails
    here with a clear error rather than being patched blindly.
    """
    code = original.__code__
    if _TWO_PASS_DEVICES not in code.co_consts:
        raise RuntimeError(
            f"GraphLowering.codegen_with_cpp_wrapper no longer checks the constant {_TWO_PASS_DEVICES}; "
            "the npu two-pass patch must be re-checked against this torch"
        )
    consts = tuple((*c, DEVICE) if c == _TWO_PASS_DEVICES else c for c in code.co_consts)
    patched = types.FunctionType(
        code.replace(co_consts=consts),
        original.__globals__,
        original.__name__,
        original.__defaults__,
        original.__closure__,
    )
    patched.__kwdefaults__ = original.__kwdefaults__
    patched.__qualname__ = original.__qualname__
    patched.__dict__.update(original.__dict__)
    return wraps_original(original)(patched)


def upstream_two_pass_code() -> types.CodeType:
    from torch._inductor.graph import GraphLowering

    # upstream's method, under any replacement of ours (each keeps it as __wrapped__)
    code: types.CodeType = inspect.unwrap(GraphLowering.codegen_with_cpp_wrapper).__code__
    return code


# CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: from 2.15 the check asks the device
def two_pass_list_has_npu() -> bool:
    """Lines up to 2.14: the two-pass check is the constant ("cuda", "xpu"); upstream knows npu if it lists it."""
    code = upstream_two_pass_code()
    if _TWO_PASS_DEVICES in code.co_consts:
        return False
    return any(isinstance(c, tuple) and DEVICE in c for c in code.co_consts)


def _system_info_with_npu(provider: DeviceProvider) -> Callable[[Any], Any]:
    def make(old: Any) -> Any:
        original = old.__func__ if isinstance(old, staticmethod) else old

        @wraps_original(original)
        @functools.cache
        def get_system() -> dict[str, Any]:
            from npu_inductor_compat import __version__

            system = {key: value for key, value in original().items() if key != "hash"}
            system["npu"] = {"provider": provider.name, "npu_inductor_compat": __version__}
            system["hash"] = hashlib.sha256(json.dumps(system, sort_keys=True).encode("utf-8")).hexdigest()
            return system

        return staticmethod(get_system)

    return make


def _clear_system_info_cache() -> None:
    codecache = sys.modules.get("torch._inductor.codecache")
    if codecache is None:
        return
    for name in ("get_system", "get_local_cache_path"):
        function: Any = getattr(codecache.CacheBase, name, None)
        if hasattr(function, "cache_clear"):
            function.cache_clear()


def benchmark_with_device_type(self: Any, fn: Any, *, warmup: Any, rep: Any, **kwargs: Any) -> Any:
    """benchmark_gpu naming the NPU: without ``device_type`` it benchmarks on the first available of
    GPU_BENCHMARK_DEVICE_TYPES (cuda, xpu, mtia), else "cuda", as upstream's own cuda/xpu benchmarkers avoid."""
    kwargs.setdefault("device_type", DEVICE)
    return self.benchmark_gpu(fn, warmup=warmup, rep=rep, **kwargs)


# CAN REMOVE when MIN_SUPPORTED >= (2, 13) [next]: benchmark_gpu takes device_type from 2.13
def benchmark_without_device_type(self: Any, fn: Any, *, warmup: Any, rep: Any, **kwargs: Any) -> Any:
    """benchmark_gpu for a line whose benchmark_gpu takes no device (it benchmarks the current stream)."""
    return self.benchmark_gpu(fn, warmup=warmup, rep=rep, **kwargs)


# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: the per-device registry exists from 2.12
def benchmarking_before_the_registry() -> bool:
    """Lines before 2.12 have no per-device benchmarker registry: every non-CPU device, "npu" included, goes to
    benchmark_gpu, so the record has nothing to do there."""
    return True


def benchmarker_registry_has_npu() -> bool:
    """Lines from 2.12: benchmarking dispatches on a per-device registry."""
    from torch._inductor.runtime import benchmarking

    return DEVICE in benchmarking._BENCHMARK_DISPATCH


def template_heuristics_record(adapters: LineAdapters) -> Patch:
    """triton-template-heuristics-npu: "npu" in Inductor's template heuristic registry
    (common/device/template_heuristics.py says what it gets and why)."""
    module = adapters.template_heuristic_registry
    target = module or template_heuristics.FIRST_REGISTRY_MODULE
    probe: Callable[[], bool] = functools.partial(template_heuristics.registry_answers_npu, target)
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [block]: 2.7 and 2.8 have no registry
    if module is None:
        probe = template_heuristics.no_registry_on_this_line
    # END CAN REMOVE
    return Patch(
        id="triton-template-heuristics-npu",
        layer="triton-family",
        why=(
            "Inductor asks a per-device registry (torch >= 2.9) for the configs of each Triton GEMM template it "
            "considers (for a device with >= 68 cores, utils.is_big_gpu); with no 'npu' entry each bmm (and, under "
            "max-autotune, mm) logs a 4 KB 'No template heuristic found' ERROR and gets no configs. npu gets the "
            f"registrations of {template_heuristics.GENERIC_DEVICE!r}, torch's "
            "Triton device without tuning of its own: the generic GEMM configs CUDA's mm templates use too, without "
            "CUDA's TMA/Blackwell entries or ROCm's classes; configs only under max-autotune, as for every device"
        ),
        upstream=(
            "torch/_inductor/template_heuristics/registry.py (2.9-2.13), heuristics/registry.py (2.14+) "
            "register_template_heuristic; torch_npu 2.14.0 registers none (it replaces the mm/bmm lowerings)"
        ),
        remove_when="torch or torch_npu registers template heuristics for 'npu' (the probe then says not needed)",
        changes=tuple(
            Change(
                f"{target}:register_template_heuristic",
                template_heuristics.register_like_generic(target, template, op),
                kind="registration",
                key=(template, DEVICE, op),
                touches=(f"{target}:{template_heuristics.REGISTRY}",),
            )
            for template, op in template_heuristics.TEMPLATES
        ),
        upstream_has_fix=probe,
        refresh=template_heuristics.forget_cached_npu_lookups(target),
    )


def triton_family_layer(provider: DeviceProvider, adapters: LineAdapters) -> tuple[Patch, ...]:
    has_triton = same_wrapper_for_every_consumer(_wrap_has_triton)
    return (
        Patch(
            id="triton-has-triton-npu",
            layer="triton-family",
            why="has_triton() only knows cuda/xpu/cpu: Inductor raises TritonMissing or falls back to CPU codegen",
            upstream=f"patch_has_triton in {PR_40264}",
            remove_when="torch's has_triton asks the device interface (is_triton_capable) on every supported line",
            # Consumers first: importing one after the source is patched would bind the wrapper as its "original".
            changes=(
                *(Change(f"{module}:has_triton", has_triton, optional=True) for module in HAS_TRITON_CONSUMERS),
                Change("torch.utils._triton:has_triton", has_triton),
            ),
        ),
        Patch(
            id="triton-gpu-types-npu",
            layer="triton-family",
            why="Inductor treats a device as GPU-like (Triton codegen, device guards) only when it is in GPU_TYPES",
            upstream=f"patch_is_gpu in {PR_40264} (appends on every call; here once, and undone)",
            remove_when="GPU_TYPES is derived from DeviceInterface.is_gpu() on every supported line (2.15)",
            changes=(Change("torch._inductor.utils:GPU_TYPES", constant(DEVICE), kind="list_item"),),
            upstream_has_fix=_npu_is_gpu_type,
            refresh=_clear_gpu_type_cache,
        ),
        # CAN REMOVE when MIN_SUPPORTED >= (2, 15) [next]: from 2.15 the check asks the device
        Patch(
            id="triton-cpp-wrapper-two-pass",
            layer="triton-family",
            why="cpp_wrapper's two-pass codegen (autotune first, then C++) is hard-coded for ['cuda', 'xpu']",
            upstream=f"patch_codegen_with_cpp_wrapper in {PR_40264}",
            remove_when="MIN_SUPPORTED >= (2, 15): the check asks _uses_gpu_cpp_wrapper",
            changes=(
                Change("torch._inductor.graph:GraphLowering.codegen_with_cpp_wrapper", _with_npu_in_two_pass_check),
            ),
            upstream_has_fix=adapters.two_pass_knows_npu,
        ),
        Patch(
            id="triton-cache-system-npu",
            layer="triton-family",
            why="Inductor's cache key describes only the CUDA device; NPU artefacts must not share keys with others",
            upstream=f"patch_cache_base_get_system in {PR_40264}",
            remove_when="torch 2.15's get_cache_system_info device hook is available on every supported line",
            changes=(Change("torch._inductor.codecache:CacheBase.get_system", _system_info_with_npu(provider)),),
            refresh=_clear_system_info_cache,
        ),
        Patch(
            id="triton-benchmarker-npu",
            layer="triton-family",
            why="Inductor's benchmarking dispatches on a per-device registry (torch >= 2.12) with no 'npu' entry",
            upstream="torch/_inductor/runtime/benchmarking.py register_benchmarker (torch 2.12)",
            remove_when="torch_npu registers its benchmarker itself",
            changes=(
                Change(
                    "torch._inductor.runtime.benchmarking:register_benchmarker",
                    lambda register: register(DEVICE, adapters.npu_benchmark, override=True),
                    kind="registration",
                    key=DEVICE,
                    touches=("torch._inductor.runtime.benchmarking:_BENCHMARK_DISPATCH",),
                ),
            ),
            upstream_has_fix=adapters.benchmarker_routes_npu,
        ),
        template_heuristics_record(adapters),
    )


def triton_registration_layer(provider: DeviceProvider, adapters: LineAdapters) -> tuple[Patch, ...]:
    def register(register_backend_for_device: Any) -> None:
        from npu_inductor_compat.common.device.npu_codegen import default_codegen_classes

        classes = provider.codegen_classes() if provider.codegen_classes else default_codegen_classes()
        scheduling, wrapper, cpp_wrapper = classes
        # COMPAT(>= 2.9): a 5th positional parameter (device_fx_wrapper_codegen) was inserted, so a positional
        # call binds to the wrong slot on some line: keywords on every line.
        # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [tag]: nothing to remove, keywords stay.
        register_backend_for_device(
            device=DEVICE,
            device_scheduling=scheduling,
            device_wrapper_codegen=wrapper,
            device_cpp_wrapper_codegen=cpp_wrapper,
        )

    return (
        Patch(
            id="triton-register-npu-backend",
            layer="triton-registration",
            why="Inductor generates code for a device only through the scheduling and wrappers registered for it",
            upstream=f"_load_triton_backend in {PR_40264}",
            remove_when="never: this is how a device backend is registered",
            changes=(
                Change(
                    f"{CODEGEN_COMMON}:register_backend_for_device",
                    register,
                    kind="registration",
                    key=DEVICE,
                    touches=BACKEND_REGISTRIES,
                ),
            ),
        ),
    )
