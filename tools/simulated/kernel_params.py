"""cpp_wrapper without running kernels: save each kernel's launch params as if the autotuner had launched it.

Upstream fills CudaKernelParamCache by compiling and launching every Triton kernel once (the "autotune block") and
reads it back to emit the C++ launch. The simulated NPU cannot compile or launch anything, so for "npu" graphs the
block only *loads* each kernel module (which builds its CachingAutotuner, nothing compiled) and hands the
autotuner's own ``save_gpu_kernel`` a simulated launcher: its first config, and compiler metadata that is empty
unless ``simulated_metadata`` (the codegen command's ``--kernel-metadata``) says otherwise. So upstream's saving
code and the ``autotuner-kernel-metadata`` fix run for real on every torch line.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.patching import wraps_original

SIMULATED_BINARY = b"// simulated NPU: no kernel binary (codegen only)\n"

# Process-wide, not thread-local: autograd compiles a backward graph on its device thread.
_metadata: Mapping[str, Any] | Callable[[str], Mapping[str, Any]] = {}
_metadata_lock = threading.Lock()


@contextlib.contextmanager
def simulated_metadata(fields: Mapping[str, Any] | Callable[[str], Mapping[str, Any]]) -> Iterator[None]:
    """Within the block, every simulated kernel's compiler metadata carries ``fields`` (e.g. workspace_size), or
    ``fields(kernel_name)`` when it is a function (tests give each kernel of a graph its own)."""
    global _metadata
    with _metadata_lock:
        previous, _metadata = _metadata, fields if callable(fields) else dict(fields)
    try:
        yield
    finally:
        with _metadata_lock:
            _metadata = previous


def simulated_launcher(autotuner: Any) -> Any:
    """What a compiled launcher looks like to ``save_gpu_kernel``: binary, metadata, config and argument names."""
    params = launch_params(autotuner)
    fields = _metadata(params["mangled_name"]) if callable(_metadata) else _metadata
    metadata = SimpleNamespace(name=params["mangled_name"], num_warps=params["num_warps"], shared=0, **fields)
    return SimpleNamespace(
        bin=SimpleNamespace(metadata=metadata, asm={"cubin": SIMULATED_BINARY}),
        config=autotuner.configs[0],
        def_args=params["def_args"],
        call_args=params["call_args"],
        global_scratch=None,
        profile_scratch=None,
        store_cubin=True,
    )


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
        from torch._inductor.virtualized import V

        if V.graph.device_type != "npu":
            return original(self)
        loaded: dict[str, Any] = {}
        with _loading_without_compiling(loaded):
            exec(self.kernel_autotune_defs.getvalue(), {})  # defines the kernels; the launches are not run
        for autotuner in loaded.values():
            autotuner.save_gpu_kernel(0, simulated_launcher(autotuner))
        return None

    return generate_and_run_autotune_block
