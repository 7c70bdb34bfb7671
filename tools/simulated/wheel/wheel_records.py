"""The torch_npu-wheel provider's records: what ``import torch_npu`` and its first Inductor compile do on an Ascend
host (its backend loaded), and those that make torch_npu's own code run and report here, per release."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated.wheel.wheel_depth import WheelDepth
from npu_inductor_compat.tools.simulated.wheel.wheel_events import (
    Events,
    counting_repeated_log_lines,
    observing_linear_fallback,
    replacing_template_precompile,
    replacing_ttir_check,
)
from npu_inductor_compat.tools.simulated.wheel.wheel_release import PACKAGE, PROVIDER_NAME
from npu_inductor_compat.tools.simulated.wheel.wheel_targets import release_targets

__all__ = ["BACKEND_MODULE", "Checker", "backend_records", "provider_records"]

# (torch_npu release, its TTIR check's "module:Class.method" or None) -> the worker both records send work to
Checker = Callable[[str, "str | None"], Any]


BACKEND_MODULE = "torch_npu._inductor"  # importing it registers torch_npu's Inductor backend for "npu"
CODEGEN_COMMON = "torch._inductor.codegen.common"
WARM_POOL_ENV = "TORCH_WARM_POOL"
HAS_TRITON = "torch.utils._triton:has_triton"
DYNAMO_UTILS = "torch_npu.utils._dynamo"  # torch_npu's dynamo set-up (what `import torch_npu` runs of it)
DEVICE_INTERFACES = "torch._dynamo.device_interface:device_interfaces"
EXTENSION_MODULE = "triton.language.extra.cann.extension"


def _load_backend(import_module: Callable[[str], Any]) -> None:
    from torch._inductor.codegen import common

    if sys.modules.get(PACKAGE) is None and not _standin_is_deep():
        raise RuntimeError(
            f"{PROVIDER_NAME}: torch_npu's Inductor code loads through the deep torch_npu stand-in: activate inside "
            "torch_npu_standin(depth='wheel')"
        )
    # torch_npu's _inductor/__init__.py warms Inductor's compile-worker pool at import unless TORCH_WARM_POOL=0:
    # subprocesses that codegen never uses (nothing is compiled here). Off while it loads, unless the user set it.
    warm = os.environ.get(WARM_POOL_ENV)
    os.environ[WARM_POOL_ENV] = warm if warm is not None else "0"
    try:
        import_module(BACKEND_MODULE)
    finally:
        if warm is None:
            os.environ.pop(WARM_POOL_ENV, None)
    if "npu" not in common.device_codegens:
        raise RuntimeError(f"{PROVIDER_NAME}: importing {BACKEND_MODULE} registered no 'npu' codegen backend")


def _standin_is_deep() -> bool:
    from npu_inductor_compat.tools.simulated.wheel import standin

    return standin._active is not None and standin._active.wheel is not None


TTIR_CHECK = (
    "torch_npu's TTIR check of each linear kernel (make_ttir_for_check: the kernel compiled to TTIR by "
    "triton-ascend's ast_to_ttir) needs triton-ascend, which never shares a process with torch's triton: it runs in "
    "a triton-ascend worker process (tools/simulated/kernels/ttir_check.py TtirCheckWorker), torch_npu's own function "
    "on "
    "the kernel source its scheduling passed"
)


def _ttir_check_record(events: Events, release: str, target: str, worker: Any) -> Patch:
    return Patch(
        id="torch-npu-wheel-ttir-check",
        layer=PROVIDER_NAME,
        why=TTIR_CHECK + "; in this process it would fail for every kernel, and torch_npu would silently fall back "
        "to its 'no_linear' kernel. Each check's result is reported per kernel; a failed one raises where "
        "torch_npu's check raises, so its fallback is taken (and reported) as on hardware",
        upstream=f"{target} (torch_npu {release} codegen/scheduling.py)",
        remove_when="never while triton-ascend and torch's triton cannot share a process",
        changes=(Change(target, replacing_ttir_check(events, worker)),),
        refresh=worker.close,  # after undo: the worker stops (a check would start it again)
    )


TEMPLATE_PRECOMPILE = "torch._inductor.autotune_process:TritonBenchmarkRequest.precompile"


def _template_precompile_record(events: Events, release: str, worker: Any) -> Patch:
    return Patch(
        id="torch-npu-wheel-template-precompile",
        layer=PROVIDER_NAME,
        why="torch_npu's select_algorithm compiles a template's choices in order and takes the first that compiles "
        "(flex attention and decoding: _nobench_select_first_compilable); the compile is triton-ascend's "
        "(_precompile_config imports triton.backends.ascend.compiler, then triton.compile for the npu target), "
        "which never shares a process with torch's triton, so here every choice failed and the lowering raised "
        "NoValidChoicesError. Each npu choice is compiled in the triton-ascend worker instead, as torch_npu's "
        "precompile does it, up to linalg (npubin needs CANN); a choice that does not get through fails as on a host",
        upstream=f"{TEMPLATE_PRECOMPILE} (torch_npu {release}'s templates use torch's benchmark requests; its "
        "autotuner's precompile: runtime/triton_heuristics.py _precompile_config)",
        remove_when="never while triton-ascend and torch's triton cannot share a process",
        changes=(Change(TEMPLATE_PRECOMPILE, replacing_template_precompile(events, worker)),),
        refresh=worker.close,
    )


def _torch_npus_has_triton(_original: Any) -> Any:
    """Run torch_npu's own patch_has_triton (from the wheel) and return what it put in place."""
    from torch.utils import _triton

    importlib.import_module(DYNAMO_UTILS).patch_has_triton()
    return _triton.has_triton


CANN_VERSION = "torch.version:cann"
COLLECT_ENV = "torch_npu.utils.collect_env"
NO_CANN_VERSION = "not known"  # what torch_npu's get_cann_version answers where no CANN install info is found


def _cann_version(_old: Any) -> str:
    """torch_npu's own answer where $ASCEND_HOME_PATH names a CANN toolkit; else the one it gives on a host without
    CANN's install info (without walking the working directory, which it does when the variable is unset)."""
    if os.environ.get("ASCEND_HOME_PATH"):
        return str(importlib.import_module(COLLECT_ENV).get_cann_version())
    return NO_CANN_VERSION


def backend_records(release: str) -> tuple[Patch, ...]:
    """What ``import torch_npu`` and torch_npu's first Inductor compile do on an Ascend host, as records: the
    device interface registered for "npu" (the simulated NPU's: torch_npu's own wraps its native device calls),
    torch's has_triton replaced by torch_npu's where ``release``'s ``import torch_npu`` does that
    (:data:`RELEASES`), then torch_npu's Inductor backend loaded (``import torch_npu._inductor``: its registration
    for "npu" and its patches of torch). Applied before this package activates, so activation's probes see
    torch_npu's state; the registries it writes are journaled (torch_npu's patches of torch have no undo)."""
    from npu_inductor_compat.common.device.layer_shared import BACKEND_REGISTRIES
    from npu_inductor_compat.tools.simulated.npu import device_provider

    targets = release_targets(release)

    def register_interface(register: Any) -> None:
        register("npu", device_provider.interface_for_provider())

    has_triton = Patch(
        id="torch-npu-wheel-has-triton",
        layer=PROVIDER_NAME,
        why=f"import torch_npu ({release}) replaces torch's has_triton with its own, which counts 'npu' as a Triton "
        "device; torch_npu's Inductor backend asks it while loading and registers nothing for 'npu' when it says no "
        "(no CUDA/XPU device here)",
        upstream=f"{DYNAMO_UTILS} patch_has_triton (add_dynamo_methods, run by torch_npu's __init__: "
        "torch_npu/_init/patches/dynamo_patches.py)",
        remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
        changes=(Change(HAS_TRITON, _torch_npus_has_triton),),
    )
    cann_version = Patch(
        id="torch-npu-wheel-cann-version",
        layer=PROVIDER_NAME,
        why=f"import torch_npu ({release}) sets torch.version.cann, which torch_npu's Inductor reads in its cache key "
        "(_inductor/codegen/common.py: CacheBase.get_system, reached by template autotuning: flex attention, "
        f"sdpa); unset, those lowerings fail with AttributeError. Its value: {NO_CANN_VERSION!r}, torch_npu's "
        "get_cann_version() where no CANN install info is found, or its own answer under $ASCEND_HOME_PATH",
        upstream=f"{COLLECT_ENV} _add_collect_env_methods (run by torch_npu's __init__: torch_npu/_init/patches/"
        "api_patches.py)",
        remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
        changes=(Change(CANN_VERSION, _cann_version, must_exist=False),),
    )
    return (
        Patch(
            id="torch-npu-wheel-device-interface",
            layer=PROVIDER_NAME,
            why="import torch_npu registers its dynamo device interface; torch_npu's Inductor backend asks for it "
            "while loading (has_triton, get_interface_for_device)",
            upstream="torch_npu/utils/_dynamo.py _dynamo_register_interface_for_device (run by torch_npu's __init__)",
            remove_when="never: the stand-in's torch_npu does what torch_npu's initialisation does",
            changes=(
                Change(
                    "torch._dynamo.device_interface:register_interface_for_device",
                    register_interface,
                    kind="registration",
                    key="npu",
                    touches=(DEVICE_INTERFACES,),
                ),
            ),
        ),
        *((has_triton,) if targets.has_triton_at_import else ()),
        cann_version,
        Patch(
            id="torch-npu-wheel-backend",
            layer=PROVIDER_NAME,
            why="torch_npu's own Inductor backend: importing torch_npu._inductor registers its scheduling and "
            "wrappers for 'npu' and applies its patches, as on an Ascend host",
            upstream="torch_npu/_inductor/__init__.py _load_backend (the released wheel's)",
            remove_when="never: this is how torch_npu loads its backend",
            changes=(
                Change(
                    "importlib:import_module",
                    _load_backend,
                    kind="registration",
                    key="npu",
                    # torch_npu 2.9+ registers its own dynamo interface for "npu" while loading
                    touches=(*BACKEND_REGISTRIES, f"{CODEGEN_COMMON}:device_op_overrides_dict", DEVICE_INTERFACES),
                ),
            ),
        ),
    )


def _backend_hash_without_driver(original: Any) -> Any:
    """torch_npu's kernel hashes triton-ascend's key with the active driver's backend: here, with this provider's
    name instead (no triton-ascend, no driver; as device_provider.py's simulated-triton-backend-hash does for
    torch's)."""
    from npu_inductor_compat.tools.simulated.npu import device_provider

    @wraps_original(original)
    def patch_triton_hash(self: Any) -> str:
        import hashlib

        return hashlib.sha256(f"{device_provider.triton_key()}-{PROVIDER_NAME}".encode()).hexdigest()

    return patch_triton_hash


HELPERS_EXTENSION_WHY = (
    "the kernels torch_npu {release} generates import `extension` (with libdevice) from its triton_helpers, which "
    "binds it only from tl.extra.cann (triton-ascend releases after 3.2.0: its Ascend extension ops); torch's triton "
    "(and triton-ascend 3.2.0) has no tl.extra.cann, so loading any kernel module fails (cannot import name "
    "'extension'), and the C++ wrapper loads each kernel module to save its launch parameters. The name is bound to "
    "a module with no ops: nothing is compiled here, and an op looked up on it raises MissingStub naming it (a "
    "kernel of indirect indexing names gather_out_to_ub, index_put, scatter_ub_to_out or custom only inside its "
    "@triton.jit body, which is never compiled here)"
)


def _active_depth() -> WheelDepth:
    from npu_inductor_compat.tools.simulated.wheel import standin

    use = standin._active
    if use is None or use.wheel is None:
        raise RuntimeError(f"{PROVIDER_NAME}: torch_npu's code runs inside torch_npu_standin(depth='wheel')")
    depth: WheelDepth = use.wheel
    return depth


def _extension_without_ops(old: Any) -> Any:
    """triton-ascend's ``extension`` where torch_npu's triton_helpers has none: a stub module with no ops (a real
    one, bound because this process's triton has tl.extra.cann, stays)."""
    from npu_inductor_compat.patching import ABSENT

    if old is not ABSENT:
        return old
    return _active_depth().stub_module(EXTENSION_MODULE)


def _triton_key_where_triton_ascend_has_it(old: Any) -> Any:
    """triton-ascend's ``triton.compiler.compiler.triton_key`` where torch's Triton has none (3.5 on): the key
    torch itself reads (device_provider.triton_key); a Triton that has it keeps its own."""
    from npu_inductor_compat.patching import ABSENT
    from npu_inductor_compat.tools.simulated.npu import device_provider

    return device_provider.triton_key if old is ABSENT else old


TRITON_KEY_WHY = (
    "torch_npu's Inductor cache key (codecache.py patch_cache_base_get_system, 2.8.0.post5 and 2.9.1) imports "
    "triton_key from triton.compiler.compiler, where triton-ascend 3.2.0 (its Triton 3.2 base) defines it; torch's "
    "Triton has none there since 3.5 (torch wraps it in triton_compat), and an ImportError there fails every compile"
)


def provider_records(events: Events, release: str, checker: Checker | None = None) -> tuple[Patch, ...]:
    """The provider's records for torch_npu ``release``: the simulated device's, and those of :data:`RELEASES`
    whose target the release has. ``checker(release, target)`` makes the TTIR-check and template-precompile worker
    (ttir_check.TtirCheckWorker, passed by the codegen process); without one, as in that worker itself, neither
    record is made."""
    from npu_inductor_compat.tools.simulated.npu import device_provider

    targets = release_targets(release)
    # the device is still the simulated one: no Triton driver, no launch
    records = [*device_provider.PROVIDER.records()]
    records.append(
        Patch(
            id="torch-npu-wheel-triton-key",
            layer=PROVIDER_NAME,
            why=TRITON_KEY_WHY,
            upstream="triton-ascend 3.2.0 triton/compiler/compiler.py triton_key; torch "
            "torch/_inductor/runtime/triton_compat.py triton_key",
            remove_when="never while the codegen process runs torch's Triton, not triton-ascend",
            changes=(
                Change("triton.compiler.compiler:triton_key", _triton_key_where_triton_ascend_has_it, must_exist=False),
            ),
        )
    )
    if targets.backend_hash is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-backend-hash",
                layer=PROVIDER_NAME,
                why="torch_npu's index kernel hashes its Triton backend itself for each kernel's inductor_meta, "
                "asking triton-ascend's triton_key and its backend for the active driver's target: neither is here "
                "(torch's Triton has no triton.compiler.compiler.triton_key since 3.5, nor triton-ascend's backend)",
                upstream=f"{targets.backend_hash} (torch_npu {release} codegen/triton.py)",
                remove_when="never while the simulated NPU has no Triton driver (codegen only)",
                changes=(Change(targets.backend_hash, _backend_hash_without_driver),),
            )
        )
    if targets.helpers_extension is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-helpers-extension",
                layer=PROVIDER_NAME,
                why=HELPERS_EXTENSION_WHY.format(release=release),
                upstream=f"{targets.helpers_extension} (torch_npu {release} runtime/triton_helpers.py binds it from "
                "tl.extra.cann.extension: triton-ascend third_party/ascend/language/cann/__init__.py and "
                "cann/extension/__init__.py; torch_npu_bridges.py BRIDGES gives triton-ascend 3.2.0 workers the same)",
                remove_when="never while torch's triton has no tl.extra.cann (the codegen process never has "
                "triton-ascend)",
                changes=(Change(targets.helpers_extension, _extension_without_ops, must_exist=False),),
            )
        )
    if checker is not None:
        worker = checker(release, targets.ttir_check)  # no process until the first check or precompile
        if targets.ttir_check is not None:
            records.append(_ttir_check_record(events, release, targets.ttir_check, worker))
        records.append(_template_precompile_record(events, release, worker))
    records.append(
        Patch(
            id="torch-npu-wheel-repeated-log-lines",
            layer=PROVIDER_NAME,
            why="torch_npu configures the root logger (config.py logging.basicConfig) and warns once per kernel from "
            "its tiling ('low_dims is null'): hundreds of lines a model. Below ERROR, each place it logs from is shown "
            "once and its repeats counted (torch_npu_wheel.log in summary.json)",
            upstream=f"torch_npu {release} _inductor/config.py (basicConfig at import), codegen/split_tiling.py",
            remove_when="never while torch_npu logs a line per kernel at WARNING",
            changes=(Change("logging:Logger.callHandlers", counting_repeated_log_lines(events)),),
        )
    )
    if targets.linear_fallback is not None:
        records.append(
            Patch(
                id="torch-npu-wheel-linear-fallback",
                layer=PROVIDER_NAME,
                why="torch_npu falls back from its linear index kernel to the no_linear one on any exception, "
                "logging only at debug level: each fallback is recorded with the error and the kernels it produced",
                upstream=f"{targets.linear_fallback} (torch_npu {release} codegen/npu_combined_scheduling.py)",
                remove_when="never while torch_npu falls back silently",
                changes=(Change(targets.linear_fallback, observing_linear_fallback(events)),),
            )
        )
    return tuple(records)
