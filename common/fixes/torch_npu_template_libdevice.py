"""Fix record for torch_npu releases whose template kernels (flex attention's among them) import torch's libdevice,
whose functions triton-ascend never maps to its own: a score_mod's tanh cannot compile (docs/torch-npu-reports.md)."""

# Importing this module imports no torch or torch_npu module; the wrapper runs only inside Inductor codegen.

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

DEFINE_KERNEL = torch_npu_names.qualname("scheduling-define-kernel")
# the header line torch's template codegen writes (codegen/triton.py gen_common_triton_imports, torch 2.7-2.15)
_TORCHS_LIBDEVICE = re.compile(r"^([ \t]*)from torch\._inductor\.runtime\.triton_helpers import libdevice\b.*$", re.M)


def releases_libdevice_import() -> str | None:
    """The line importing libdevice in the header torch_npu writes for its own kernels (the index kernel's
    ``gen_triton_ext_imports``), or None where the release has no such header."""
    try:
        header = torch_npu_names.as_written("index-kernel-ext-imports")()
    except (ImportError, AttributeError):
        return None
    lines = [line.strip() for line in str(header).splitlines() if re.search(r"\bimport libdevice\b", line)]
    return lines[-1] if lines else None


def imports_torchs_libdevice(line: str) -> bool:
    """Whether a header line imports torch's libdevice (the one whose functions triton-ascend leaves as stubs)."""
    return _TORCHS_LIBDEVICE.fullmatch(line.strip()) is not None


def templates_import_the_releases_libdevice() -> bool:
    """The probe: the release leaves torch's template header alone only where it has no header of its own for its
    kernels (its releases with their own template imports write them themselves), or that header imports torch's."""
    line = releases_libdevice_import()
    return line is None or imports_torchs_libdevice(line)


def with_the_releases_libdevice(source: str, line: str) -> str:
    """``source`` with each import of torch's libdevice replaced by ``line`` (at the same indent)."""
    return _TORCHS_LIBDEVICE.sub(lambda found: found.group(1) + line, source)


def _template_libdevice(original: Callable[..., Any]) -> Callable[..., Any]:
    """define_kernel with a template kernel's source importing libdevice as torch_npu's own kernels do.

    torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 write their index kernels' header themselves
    (NPUIndexTritonKernel.gen_triton_ext_imports: libdevice from npu_triton_helpers, triton-ascend's) but leave
    torch's template header as it is: ``from torch._inductor.runtime.triton_helpers import libdevice``, torch's
    ``tl.extra.libdevice``, whose functions are stubs triton-ascend does not map (its backend's get_module_map is
    empty). A template calling one (flex attention with ``torch.tanh`` in its score_mod) fails to compile: the call
    returns None (``'NoneType' object has no attribute 'type'``). The other releases write their template header
    themselves (select_algorithm.py) with their libdevice. Only template kernels are touched.
    """

    @wraps_original(original)
    def define_kernel(self: Any, src_code: Any, node_schedule: Any, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        from torch._inductor.select_algorithm import TritonTemplateKernel

        if isinstance(kernel, TritonTemplateKernel) and isinstance(src_code, str):
            line = releases_libdevice_import()
            if line is not None:
                src_code = with_the_releases_libdevice(src_code, line)
        return original(self, src_code, node_schedule, kernel, *args, **kwargs)

    return define_kernel


TEMPLATE_LIBDEVICE = Patch(
    id="torch-npu-template-libdevice",
    proven_by=(
        "tests/tools/wheel/test_torch_npu_flex.py::test_a_score_mods_tanh_compiles_only_with_the_template_libdevice_record",
    ),
    layer="fix",
    why=(
        "torch_npu's 2.8.0.post5, 2.9.1, 2.11.0.post3 and 2.12.0.post3 give their own kernels triton-ascend's "
        "libdevice but leave torch's template header, whose libdevice is tl.extra.libdevice: stubs triton-ascend "
        "never maps (get_module_map is empty). A template calling one, flex attention with tanh in its score_mod, "
        "cannot compile ('NoneType' object has no attribute 'type'); its source imports the release's libdevice"
    ),
    upstream=(
        "torch_npu 2.8.0.post5, 2.9.1, 2.11.0.post3, 2.12.0.post3 codegen/triton.py gen_triton_ext_imports (their "
        "index kernels only); 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.13.0 and 2.14.0 write their template header "
        "(select_algorithm.py, codegen/triton.py); report text in docs/torch-npu-reports.md"
    ),
    remove_when="every torch_npu release in use imports its libdevice in template kernels (the probe then says not "
    "needed)",
    changes=(Change(DEFINE_KERNEL, _template_libdevice, optional=True),),
    upstream_has_fix=templates_import_the_releases_libdevice,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (TEMPLATE_LIBDEVICE,)
# NPUTritonScheduling.define_kernel: torch's template call answered torch's way (torch_npu_flex_lowering.py) first
AFTER = ("torch_npu_flex_lowering",)

__all__ = [
    "FIXES",
    "TEMPLATE_LIBDEVICE",
    "imports_torchs_libdevice",
    "templates_import_the_releases_libdevice",
    "with_the_releases_libdevice",
]
