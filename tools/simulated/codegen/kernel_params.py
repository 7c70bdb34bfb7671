"""cpp_wrapper without running kernels: save each kernel's launch params as if the autotuner had launched it."""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from npu_inductor_compat.patching import wraps_original

SIMULATED_BINARY = b"// simulated NPU: no kernel binary (codegen only)\n"

# Process-wide, not thread-local: autograd compiles a backward graph on its device thread.
_metadata: Mapping[str, Any] | Callable[[str], Mapping[str, Any]] = {}
_metadata_lock = threading.Lock()
_compiled_by_triton_ascend = False
# How the launch params are saved for one autotuner: default, a simulated launcher of its first config; a provider
# whose autotuner chooses among candidates itself gives its own (triton_ascend_compiled's ``seed``)
_seed: Callable[[Any], None] | None = None
# Fields a later triton-ascend records that 3.2.0 does not, which the codegen reading the metadata needs (under
# --kernel-metadata's): triton_ascend_compiled's ``recorded``
_recorded: Mapping[str, Any] = {}

# Where each field of triton_ascend_metadata comes from in triton-ascend 3.2.0 (python/triton/compiler/compiler.py
# compile(): a kernel's metadata starts as {hash, target, **options.__dict__, **env_vars}, then each stage adds its
# own; python/triton/backends/ascend/compiler.py: NPUOptions, _parse_linalg_metadata, AscendBackend.binary_ext).
TRITON_ASCEND_FIELDS = {
    "kernel_name": "_parse_linalg_metadata: the linalg func.func's name (the kernel's)",
    "mix_mode": "_parse_linalg_metadata: the linalg's mix_mode attribute, which the triton-adapter sets to 'mix' "
    "when the kernel has a tt.dot (or tt.dot_scaled) and 'aiv' otherwise (ascend/triton-adapter/lib/TritonToLinalg/"
    "TritonToLinalgPass.cpp existDot; here read from the kernel's source: a tl.dot or tl.dot_scaled call)",
    "name": "_parse_linalg_metadata: kernel_name + ' ' + mix_mode (its driver's load_binary splits it again)",
    "parallel_mode": "NPUOptions.parallel_mode 'simd' (compile_mode 'simd'), then the linalg's parallel_mode "
    "attribute: 'simd', or 'mix_simd_simt' for a kernel with SIMT ops (TritonToLinalgPass.cpp existSIMTOp; not "
    "modelled: --kernel-metadata parallel_mode=... gives it)",
    "force_simt_only": "NPUOptions.force_simt_only False (compile_mode 'simt_only' sets it)",
    "compile_on_910_95": "NPUOptions.compile_on_910_95: the module's is_compile_on_910_95, False (a kernel option "
    "can set it; --kernel-metadata compile_on_910_95=true here)",
    "shared": "_parse_linalg_metadata: 1, hard-coded ('NPU backend does not limit on shared memory')",
    "num_warps": "NPUOptions.num_warps: the config's",
    "required_ub_bits": "_parse_linalg_metadata: 0",
    "compile_mode": "NPUOptions.compile_mode 'simd'",
}
# Not in TRITON_ASCEND_FIELDS (--kernel-metadata gives them): workspace_size, lock_num and lock_init_val, recorded
# only when the compiled kernel library exports their callback (compiler.py __get_metadata_attr_by_callback:
# _infer_workspace_shape_function, _infer_sync_block_lock_num_function, _infer_sync_block_lock_init_function); and
# sync_block_lock_layout, auto_tile_and_bind_subblock, shared_mem_dynamic_size, has_auto_blockify_blacklist_op,
# which 3.2.0 never records (later triton-ascend releases do).
TRITON_ASCEND_BINARY = "npubin"  # AscendBackend.binary_ext for target "npu": the binary's key in CompiledKernel.asm


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


@contextlib.contextmanager
def triton_ascend_compiled(
    seed: Callable[[Any], None] | None = None, recorded: Mapping[str, Any] | None = None
) -> Iterator[None]:
    """Within the block, every simulated launcher looks like a kernel compiled by triton-ascend 3.2.0
    (:func:`triton_ascend_metadata`, the binary under ``asm["npubin"]``); ``seed(autotuner)``, when given, saves each
    kernel's launch params instead of :func:`save_first_config` (an autotuner choosing among candidates itself);
    ``recorded``: fields a later triton-ascend also records (--kernel-metadata's fields override them).

    The ``torch_npu-wheel`` provider's runs are made within it: torch_npu's own autotuner saves the params there, and
    reads far more of the compiled kernel than upstream's, so the simulated launcher is a kernel as triton-ascend
    3.2.0's compiler leaves it.
    """
    global _compiled_by_triton_ascend, _seed, _recorded
    with _metadata_lock:
        previous = _compiled_by_triton_ascend, _seed, _recorded
        _compiled_by_triton_ascend, _seed, _recorded = True, seed, dict(recorded or {})
    try:
        yield
    finally:
        with _metadata_lock:
            _compiled_by_triton_ascend, _seed, _recorded = previous


DOT = re.compile(r"\btl\.dot(?:_scaled)?\(")


def triton_ascend_metadata(kernel: str, num_warps: int, source: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata triton-ascend 3.2.0's compiler records for ``kernel`` (:data:`TRITON_ASCEND_FIELDS`) of Triton
    ``source``, with ``fields`` (--kernel-metadata) over it; ``name`` follows the mix mode."""
    mix_mode = fields.get("mix_mode", "mix" if DOT.search(source) else "aiv")
    found: dict[str, Any] = {
        "kernel_name": kernel,
        "parallel_mode": "simd",
        "force_simt_only": False,
        "compile_on_910_95": False,
        "shared": 1,
        "num_warps": num_warps,
        "required_ub_bits": 0,
        "compile_mode": "simd",
        **fields,
    }
    found["mix_mode"] = mix_mode
    found["name"] = f"{kernel} {mix_mode}"
    return found


def simulated_launcher(autotuner: Any, config: Any = None) -> Any:
    """What a compiled launcher of ``config`` (default: the autotuner's first) looks like to ``save_gpu_kernel``:
    binary, metadata, config and argument names."""
    config = autotuner.configs[0] if config is None else config
    params = launch_params(autotuner, config)
    fields = _metadata(params["mangled_name"]) if callable(_metadata) else _metadata
    if _compiled_by_triton_ascend:
        source = getattr(autotuner.fn, "src", "")
        recorded = triton_ascend_metadata(params["mangled_name"], params["num_warps"], source, {**_recorded, **fields})
        metadata = SimpleNamespace(**recorded)
        asm = {TRITON_ASCEND_BINARY: SIMULATED_BINARY}
    else:
        metadata = SimpleNamespace(name=params["mangled_name"], num_warps=params["num_warps"], shared=0, **fields)
        asm = {"cubin": SIMULATED_BINARY}
    return SimpleNamespace(
        bin=SimpleNamespace(metadata=metadata, asm=asm),
        config=config,
        def_args=params["def_args"],
        call_args=params["call_args"],
        global_scratch=None,
        profile_scratch=None,
        store_cubin=True,
    )


def launch_params(autotuner: Any, config: Any = None) -> dict[str, Any]:
    """What CachingAutotuner.save_gpu_kernel would store after a launch of ``config`` (default: the first),
    computed from the autotuner alone."""
    from torch._inductor.runtime.triton_heuristics import config_to_dict

    config = autotuner.configs[0] if config is None else config
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
        # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [tag]: nothing to remove, the keys stay.
        "global_scratch": None,
        "profile_scratch": None,
    }


@contextlib.contextmanager
def driver_selection_inert() -> Iterator[None]:
    """``set_driver_to_gpu``, which kernel modules call at load, does nothing while the block runs: there is no
    GPU driver to select (triton-ascend's driver is active only with CANN), and nothing is launched."""
    from torch._inductor.runtime import triton_helpers

    original = getattr(triton_helpers, "set_driver_to_gpu", None)
    if original is None:
        yield
        return
    # modules that re-export torch's function (torch_npu's runtime/triton_helpers.py: `from
    # torch._inductor.runtime.triton_helpers import *`), which kernels call through them
    owners = [triton_helpers]
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if module is not triton_helpers and isinstance(namespace, dict):
            if namespace.get("set_driver_to_gpu") is original:
                owners.append(module)
    for owner in owners:
        owner.set_driver_to_gpu = _no_driver  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for owner in owners:
            owner.set_driver_to_gpu = original  # type: ignore[attr-defined]


def _no_driver() -> None:
    return None


@contextlib.contextmanager
def _loading_without_compiling(loaded: dict[str, Any]) -> Iterator[None]:
    """AsyncCompile.triton loads the kernel module (no precompile) and keeps its autotuner; set_driver_to_gpu is
    inert (there is no GPU driver to select)."""
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.codecache import PyCodeCache

    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        module = PyCodeCache.load(source_code)
        loaded[kernel_name] = getattr(module, kernel_name)
        return loaded[kernel_name]

    saved = {name: AsyncCompile.__dict__[name] for name in ("triton", "wait")}
    AsyncCompile.triton = triton
    AsyncCompile.wait = lambda self, scope: None
    try:
        with driver_selection_inert():
            yield
    finally:
        for name, value in saved.items():
            setattr(AsyncCompile, name, value)


def seed_first_pass(kernels: Mapping[str, str]) -> None:
    """The first pass of a two-pass C++ wrapper (torch_npu 2.12.0.post3's codegen_with_cpp_wrapper for "npu")
    runs the graph's Python wrapper once with real inputs: each kernel's autotuner runs and saves its launch params
    (``store_cubin``), which the second pass, the C++ wrapper, reads. Here each kernel module (name -> the source
    the Python wrapper defines it with) is loaded without compiling and its autotuner saves them, as in the one-pass
    block."""
    from torch._inductor.codecache import PyCodeCache

    loaded: dict[str, Any] = {}
    with _loading_without_compiling(loaded):
        for name, source in kernels.items():
            loaded[name] = getattr(PyCodeCache.load(source), name)
    for autotuner in loaded.values():
        (_seed or save_first_config)(autotuner)


def save_first_config(autotuner: Any) -> None:
    """The autotuner saves the launch params of a simulated launcher of its first config (stream 0)."""
    autotuner.save_gpu_kernel(0, simulated_launcher(autotuner))


def seed_instead_of_autotune(original: Any) -> Any:
    """cpp_wrapper without running kernels: for "npu" graphs the autotune block saves each kernel's launch params as
    if the autotuner had launched it.

    Upstream fills CudaKernelParamCache by compiling and launching every Triton kernel once (the "autotune block") and
    reads it back to emit the C++ launch. The simulated NPU cannot compile or launch anything, so for "npu" graphs the
    block only *loads* each kernel module (which builds its CachingAutotuner, nothing compiled) and hands the
    autotuner's own ``save_gpu_kernel`` a simulated launcher (:func:`simulated_launcher`): its first config, and
    compiler metadata that is empty unless :func:`simulated_metadata` (the codegen command's ``--kernel-metadata``)
    says otherwise. So upstream's saving code and the ``autotuner-kernel-metadata`` fix run for real on every torch
    line.
    """

    @wraps_original(original)
    def generate_and_run_autotune_block(self: Any) -> Any:
        from torch._inductor.virtualized import V

        if V.graph.device_type != "npu":
            return original(self)
        loaded: dict[str, Any] = {}
        with _loading_without_compiling(loaded):
            exec(self.kernel_autotune_defs.getvalue(), {})  # defines the kernels; the launches are not run
        for autotuner in loaded.values():
            (_seed or save_first_config)(autotuner)
        return None

    return generate_and_run_autotune_block
