"""Where the torch_npu-wheel provider's records aim in each torch_npu release it runs, each target read in that
release's wheel (tests check the table against the wheels)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable

__all__ = ["RELEASES", "ReleaseTargets", "release_targets"]


COMBINED_SCHEDULING = "torch_npu._inductor.codegen.npu_combined_scheduling:NPUCombinedScheduling"
LINEAR_SCHEDULING = "torch_npu._inductor.codegen.scheduling:NPUTritonScheduling"
INDEX_KERNEL = "torch_npu._inductor.codegen.triton:NPUIndexTritonKernel"
# 2.7.1.post11 and 2.9.0.post9: every kernel runs `from torch_npu._inductor.runtime.triton_helpers import libdevice,
# extension, math as tl_math` (codegen/triton.py); the module binds `extension` only from tl.extra.cann
HELPERS_EXTENSION = f"{torch_npu_names.module_of('runtime-triton-helpers')}:extension"


@dataclass(frozen=True)
class ReleaseTargets:
    """Where this provider's records aim in one torch_npu release (each read in that wheel's ``_inductor``), and
    what its ``import torch_npu`` does that the stand-in does in its place. A target is None where the release has
    no such code (then the record is not made: there is nothing to replace or observe)."""

    # "module:Class.method": the TTIR check torch_npu runs on each linear kernel (fails without triton-ascend)
    ttir_check: str | None
    # "module:Class.method": tries the linear index kernel and falls back to no_linear on any exception
    linear_fallback: str | None
    # "module:Class.method": torch_npu's own Triton backend hash for a kernel's inductor_meta (triton-ascend's
    # triton_key and the active driver's backend); None: the kernel asks torch's triton_hash_with_backend, which
    # the simulated device's record (device_provider.py simulated-triton-backend-hash) answers
    backend_hash: str | None
    # `import torch_npu` replaces torch.utils._triton.has_triton with torch_npu's (utils/_dynamo.py
    # add_dynamo_methods -> patch_has_triton), which its Inductor backend asks while loading
    has_triton_at_import: bool
    layout: str  # what the release's _inductor does here, in a sentence (why a target is None)
    # "module:extension": where the release's kernels import triton-ascend's `extension` from (its triton_helpers
    # binds it only from tl.extra.cann, which torch's triton never has); None: its kernels import no `extension`
    helpers_extension: str | None = None
    # compiler metadata the release's autotuner reads that triton-ascend 3.2.0 (the simulated compiler) does not
    # record: given to every simulated kernel (kernel_params.triton_ascend_compiled's ``recorded``)
    compiler_fields: tuple[tuple[str, Any], ...] = ()


_COMBINED_LAYOUT = (
    "codegen/npu_combined_scheduling.py NPUCombinedScheduling is registered for 'npu'; its codegen_node tries "
    "codegen/scheduling.py NPUTritonScheduling (the linear index kernel, checked by make_ttir_for_check) and falls "
    "back to the no_linear kernel"
)
# 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 (each read in its wheel): the combined layout, has_triton replaced
# at import
_COMBINED_TARGETS = ReleaseTargets(
    ttir_check=f"{LINEAR_SCHEDULING}.make_ttir_for_check",
    linear_fallback=f"{COMBINED_SCHEDULING}.codegen_node",
    backend_hash=None,
    has_triton_at_import=True,
    layout=_COMBINED_LAYOUT,
    helpers_extension=HELPERS_EXTENSION,
)
# 2.10.0.post7, 2.13.0 and 2.14.0 are built for a triton-ascend newer than 3.2.0: their autotuner's save_gpu_kernel
# (runtime/triton_heuristics.py) reads metadata.is_pure_simt, an NPUOptions field of later releases (False: SIMD)
_NEWER_TRITON_ASCEND = dataclasses.replace(_COMBINED_TARGETS, compiler_fields=(("is_pure_simt", False),))
# 2.11.0.post3 and 2.12.0.post3: one index kernel registered directly, has_triton replaced at import
_INDEX_ONLY_TARGETS = ReleaseTargets(
    ttir_check=None,
    linear_fallback=None,
    backend_hash=f"{INDEX_KERNEL}.patch_triton_hash",
    has_triton_at_import=True,
    layout="codegen/scheduling.py NPUTritonScheduling is registered for 'npu' directly (the package has no "
    "npu_combined_scheduling.py): one index kernel, no linear/no_linear choice, no TTIR check",
)
_INDEX_ONLY_LOADING_HAS_TRITON = dataclasses.replace(_INDEX_ONLY_TARGETS, has_triton_at_import=False)
# The torch_npu releases of PAIRED (and only those: the targets are read in their wheels, tests check them).
RELEASES: dict[str, ReleaseTargets] = {
    "2.7.1.post11": ReleaseTargets(
        ttir_check=f"{LINEAR_SCHEDULING}.make_ttir_for_check",
        linear_fallback=f"{COMBINED_SCHEDULING}.codegen_node",
        backend_hash=None,
        has_triton_at_import=False,  # its backend replaces it while loading (_inductor/utils.py patch_has_triton)
        layout=_COMBINED_LAYOUT,
        helpers_extension=HELPERS_EXTENSION,
    ),
    # 2.8.0.post5 and 2.9.1 (built from an older branch than 2.9.0.post9): one index kernel, as 2.12.0.post3, but
    # like 2.7.1 their backend replaces has_triton while loading (_inductor/__init__.py)
    "2.8.0.post5": _INDEX_ONLY_LOADING_HAS_TRITON,
    "2.9.0.post9": _COMBINED_TARGETS,
    "2.9.1": _INDEX_ONLY_LOADING_HAS_TRITON,
    "2.10.0.post7": _NEWER_TRITON_ASCEND,
    "2.11.0.post3": _INDEX_ONLY_TARGETS,
    "2.12.0.post3": _INDEX_ONLY_TARGETS,
    "2.13.0": _NEWER_TRITON_ASCEND,
    "2.14.0": _NEWER_TRITON_ASCEND,
}


def release_targets(release: str) -> ReleaseTargets:
    """The :data:`RELEASES` entry of torch_npu ``release``; WheelUnavailable when it has none."""
    if release not in RELEASES:
        raise WheelUnavailable(
            f"torch_npu {release}: this provider's records have no targets for it (torch_npu_wheel.py RELEASES: "
            f"{', '.join(RELEASES)})"
        )
    return RELEASES[release]
