"""cpp_wrapper on torch 2.7/2.9 without running kernels: seed CudaKernelParamCache from the kernels' own metadata.

Upstream fills that cache by compiling and launching every Triton kernel once (the "autotune block") and reads it
back to emit the C++ launch. The simulated NPU cannot launch anything, so for "npu" graphs the block only *loads*
each kernel module (which builds its CachingAutotuner, nothing compiled) and records the parameters the launch
needs from the autotuner's first config and metadata. torch 2.12 compiles kernels lazily in the C++ and never
calls this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from npu_inductor_compat.patching import wraps_original

SIMULATED_BINARY = b"// simulated NPU: no kernel binary (codegen only)\n"


def launch_params(autotuner: Any) -> dict[str, Any]:
    """What CachingAutotuner.save_gpu_kernel would store after a launch, computed from the autotuner alone."""
    from torch._inductor.runtime.triton_heuristics import config_to_dict

    config = autotuner.configs[0]
    config_kwargs = config_to_dict(config)
    triton_meta, inductor_meta = autotuner.triton_meta, autotuner.inductor_meta
    signature = triton_meta.get("signature", {})
    constants = triton_meta.get("constants", {})
    arg_names = list(autotuner.fn.arg_names)
    implicit = {"num_warps", "num_stages"}
    def_args = [name for name in arg_names if name not in implicit]
    def_args = [*def_args, *inductor_meta.get("extra_launcher_args", [])]
    def_args = [name for name in def_args if name not in config_kwargs]
    call_args = [
        name
        for name in arg_names
        if signature.get(name, "constexpr") != "constexpr" and not (name in constants and constants[name] is None)
    ]
    return {
        "mangled_name": inductor_meta["kernel_name"],
        "num_warps": config.num_warps,
        "shared_mem": 0,
        "stream": 0,
        "config": config_kwargs,
        "inductor_meta": inductor_meta,
        "triton_meta": triton_meta,
        "def_args": def_args,
        "call_args": call_args,
        # COMPAT(>= 2.8): the params carry global_scratch; (>= 2.9) profile_scratch. None: the kernel needs none.
        # CAN REMOVE when MIN_SUPPORTED >= (2, 9): nothing to remove, the keys stay.
        "global_scratch": None,
        "profile_scratch": None,
    }


@contextlib.contextmanager
def _loading_without_compiling(loaded: dict[str, Any]) -> Iterator[None]:
    """AsyncCompile.triton loads the kernel module (no precompile) and keeps its autotuner; set_driver_to_gpu is
    inert (there is no GPU driver to select)."""
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime import triton_helpers

    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        module = PyCodeCache.load(source_code)
        loaded[kernel_name] = getattr(module, kernel_name)
        return loaded[kernel_name]

    saved = {
        (AsyncCompile, "triton"): AsyncCompile.__dict__["triton"],
        (AsyncCompile, "wait"): AsyncCompile.__dict__["wait"],
        (triton_helpers, "set_driver_to_gpu"): getattr(triton_helpers, "set_driver_to_gpu", None),
    }
    AsyncCompile.triton = triton
    AsyncCompile.wait = lambda self, scope: None
    triton_helpers.set_driver_to_gpu = lambda: None
    try:
        yield
    finally:
        for (owner, name), value in saved.items():
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def seed_instead_of_autotune(original: Any) -> Any:
    @wraps_original(original)
    def generate_and_run_autotune_block(self: Any) -> Any:
        from torch._inductor.codecache import CudaKernelParamCache
        from torch._inductor.virtualized import V

        if V.graph.device_type != "npu":
            return original(self)
        loaded: dict[str, Any] = {}
        with _loading_without_compiling(loaded):
            exec(self.kernel_autotune_defs.getvalue(), {})  # defines the kernels; the launches are not run
        for name, autotuner in loaded.items():
            CudaKernelParamCache.set(name, launch_params(autotuner), SIMULATED_BINARY, "cubin")
        return None

    return generate_and_run_autotune_block
