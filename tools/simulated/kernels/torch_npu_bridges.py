"""torch_npu's environment in a triton-ascend worker: its deep stand-in, less the stubs triton-ascend answers for
real, plus :data:`BRIDGES`, the names torch_npu reaches in triton-ascend releases newer than the installed one."""

from __future__ import annotations

import contextlib
import importlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.tools.simulated.kernels.triton_ascend_site import is_triton_ascend


@dataclass(frozen=True)
class Bridge:
    """A name torch_npu's code reaches in triton-ascend releases newer than the installed one, given to it in a
    worker only where the installed triton-ascend lacks it and the torch_npu release reaches it. Like
    wheel_stubs.py's stub table: who reaches it and why, what the bridge gives, and the real source it stands
    for; each worker reports the bridges it installed."""

    name: str  # "module:attribute", as torch_npu's code reaches it
    why: str
    returns: str
    source: str
    needed: Callable[[Path], bool]  # given the wheel's torch_npu/ once torch_npu's backend is loaded
    install: Callable[[], None]


TRITON_HELPERS = torch_npu_names.module_of("runtime-triton-helpers")
ASCEND_IR_PARENT = "triton._C.libtriton.ascend"


class _AbsentExtension(types.ModuleType):
    """``tl.extra.cann.extension`` where the installed triton-ascend has none: every op is absent, and a kernel that
    names one gets the code generator's compile error saying so."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name, name=name)
        import triton

        raise AttributeError(
            f"triton-ascend {triton.__version__} has no tl.extra.cann.extension.{name}: the Ascend extension ops "
            "(gather_out_to_ub, index_put, scatter_ub_to_out, custom, ...) came with later triton-ascend releases",
            name=name,
        )


def _helpers() -> Any:
    """torch_npu's runtime/triton_helpers.py, or None for a release keeping its helpers elsewhere (nothing to
    bridge there)."""
    try:
        return importlib.import_module(TRITON_HELPERS)
    except ModuleNotFoundError:
        return None


def _helpers_lack_extension(_package: Path) -> bool:
    helpers = _helpers()
    return helpers is not None and not hasattr(helpers, "extension")


def _bind_absent_extension() -> None:
    module = _AbsentExtension("triton.language.extra.cann.extension", _AbsentExtension.__doc__)
    helpers: Any = importlib.import_module(TRITON_HELPERS)
    helpers.extension = module


def _helpers_lack_ascend_libdevice(_package: Path) -> bool:
    """torch_npu's triton_helpers bound no libdevice of its own (2.9.0.post9 and 2.10.0.post7 bind it from
    tl.extra.cann only): its ``libdevice`` is torch's, by ``from torch._inductor.runtime.triton_helpers import *``."""
    from torch._inductor.runtime import triton_helpers as torchs

    helpers = _helpers()
    return helpers is not None and getattr(helpers, "libdevice", None) is getattr(torchs, "libdevice", None)


def _bind_ascend_libdevice() -> None:
    import triton.language as tl

    helpers: Any = importlib.import_module(TRITON_HELPERS)
    helpers.libdevice = tl.extra.ascend.libdevice


def _ascend_ir_missing(package: Path) -> bool:
    """libtriton.ascend has no ``ir`` and torch_npu's code imports it (2.12's precompile does not)."""
    if hasattr(importlib.import_module(ASCEND_IR_PARENT), "ir"):
        return False
    return any(
        f"from {ASCEND_IR_PARENT} import ir" in path.read_text(errors="replace")
        for path in (package / "_inductor").rglob("*.py")
    )


def _bind_ascend_ir() -> None:
    import triton

    def load_dialects(context: Any) -> None:
        """triton-ascend 3.2.0 has no Ascend dialect to load (AscendBackend.load_dialects does nothing)."""

    module = types.ModuleType(f"{ASCEND_IR_PARENT}.ir", f"bridge: triton-ascend {triton.__version__} has no ascend.ir")
    module.load_dialects = load_dialects  # type: ignore[attr-defined]
    parent: Any = importlib.import_module(ASCEND_IR_PARENT)
    parent.ir = module


BRIDGES: tuple[Bridge, ...] = (
    Bridge(
        f"{TRITON_HELPERS}:extension",
        "every kernel torch_npu generates imports `extension` (with libdevice) from its triton_helpers, which binds "
        "both from tl.extra.cann (later triton-ascend releases' name for the `ascend` extra; 3.2.0 has only "
        "tl.extra.ascend) and, failing that, binds only libdevice (tl.extra.ascend.libdevice, the real one): "
        "unbridged, every kernel fails to import (cannot import name 'extension')",
        "a module with no ops: torch_npu's own fallback binding of libdevice stands; a kernel calling an extension "
        "op (indirect indexing: gather_out_to_ub, index_put, scatter_ub_to_out, custom) fails to compile, naming "
        "the op",
        "triton-ascend third_party/ascend/language/cann/__init__.py (tl.extra.cann: libdevice, extension) and "
        "cann/extension/__init__.py (the ops); torch_npu _inductor/runtime/triton_helpers.py (the binding)",
        _helpers_lack_extension,
        _bind_absent_extension,
    ),
    Bridge(
        f"{TRITON_HELPERS}:libdevice",
        "the kernels import libdevice from torch_npu's triton_helpers; 2.9.0.post9's and 2.10.0.post7's bind it "
        "from tl.extra.cann only, with no fallback, so on triton-ascend 3.2.0 the name is torch's (its generic "
        "libdevice, for CUDA and HIP): libdevice.exp in a softmax, libdevice.pow, fail to compile",
        "triton-ascend 3.2.0's own libdevice, tl.extra.ascend.libdevice (what later releases call "
        "tl.extra.cann.libdevice), as the other releases' triton_helpers fall back to",
        "triton-ascend third_party/ascend/language/cann/__init__.py (tl.extra.cann.libdevice); triton-ascend 3.2.0 "
        "triton/language/extra/ascend/libdevice.py; torch_npu 2.9.0.post9 and 2.10.0.post7 "
        "_inductor/runtime/triton_helpers.py",
        _helpers_lack_ascend_libdevice,
        _bind_ascend_libdevice,
    ),
    Bridge(
        f"{ASCEND_IR_PARENT}:ir",
        "torch_npu's TTIR compile (runtime/triton_heuristics.py _make_ttir_module_from_cfg, which make_ttir_for_check "
        "runs) calls `from triton._C.libtriton.ascend import ir as ascend_ir; ascend_ir.load_dialects(context)` "
        "before ast_to_ttir; triton-ascend 3.2.0's libtriton.ascend has no `ir`",
        "a module whose load_dialects(context) does nothing, as 3.2.0's own AscendBackend.load_dialects "
        "(triton/backends/ascend/compiler.py): 3.2.0 has no TritonAscend dialect, its TTIR is triton's dialects, "
        "loaded by libtriton's ir.load_dialects",
        "triton-ascend third_party/ascend/triton_ascend.cc (the libtriton.ascend.ir submodule: the TritonAscend "
        "dialect's builder methods and load_dialects)",
        _ascend_ir_missing,
        _bind_ascend_ir,
    ),
)


def _real_in_triton_ascend(module: str) -> bool:
    """Whether a stubbed module is triton-ascend's and exists for real here (then the stub must not shadow it)."""
    import importlib.util

    return module.partition(".")[0] == "triton" and importlib.util.find_spec(module) is not None


@contextlib.contextmanager
def torch_npu_environment(release: str) -> Iterator[dict[str, Any]]:
    """In a worker whose ``triton`` is triton-ascend: torch_npu ``release``'s deep stand-in with its backend loaded,
    as the codegen process has it (torch_npu_wheel.py ``wheel_run``: the wheel's ``_inductor`` behind the stand-in,
    the stub table's native stubs, the simulated device), except that the stub table's triton-ascend attributes whose
    real module exists are dropped, and :data:`BRIDGES` installed where needed. Yields what it did: ``torch_npu``,
    ``triton_ascend`` (versions), ``unstubbed`` and ``bridges`` (names)."""
    import triton

    from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel, wheel_stubs

    if not is_triton_ascend(Path(triton.__file__).parent.parent):
        raise RuntimeError(f"this worker's triton ({triton.__file__}) is not triton-ascend")
    # (the active-driver stub stays: triton-ascend's NPUDriver is real here but not active without CANN)
    unstubbed = [
        stub.name for stub in wheel_stubs.STUBS if stub.kind == "attribute" and _real_in_triton_ascend(stub.module)
    ]
    # the worker is a process of its own: the table it runs with is the codegen process's, less those entries
    wheel_stubs.STUBS = tuple(stub for stub in wheel_stubs.STUBS if stub.name not in unstubbed)
    with torch_npu_wheel.wheel_run(release) as (use, _provider, _events):
        bridged = []
        for bridge in BRIDGES:
            if bridge.needed(use.wheel.tree.package):
                bridge.install()
                bridged.append(bridge.name)
        yield {
            "torch_npu": use.wheel.tree.version,
            "triton_ascend": str(triton.__version__),
            "unstubbed": unstubbed,
            "bridges": bridged,
            "missing_stubs": use.wheel.missing,  # live: filled while kernels load
        }
