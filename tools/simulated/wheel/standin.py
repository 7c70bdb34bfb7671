"""A stand-in for ``torch_npu`` while a script runs on the simulated NPU (the ``codegen`` command)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.npu import not_simulated, npu_ops
from npu_inductor_compat.tools.simulated.npu.not_simulated import NotSimulated, NotSimulatedError, NotSimulatedModule
from npu_inductor_compat.tools.simulated.npu.not_simulated import message as _message

__all__ = [
    "MARK",
    "NotSimulated",
    "NotSimulatedError",
    "NotSimulatedModule",
    "StandInUse",
    "not_simulated_attribute",
    "torch_npu_standin",
]

PACKAGE = "torch_npu"
DEVICE_MODULE = "torch.npu"  # the simulated device's module (device.py); torch_npu.npu is this module
MARK = "_npu_inductor_compat_standin"
ORIGIN = "npu_inductor_compat stand-in (not installed)"
STANDIN_DOC = (
    "Stand-in for torch_npu, set up by npu_inductor_compat while a script runs on its simulated NPU (codegen). It is "
    "not torch_npu and is not installed: torch_npu.npu is the simulated torch.npu (devices, streams, events, seeds, "
    "memory queries, options); torch_npu's operators and other modules are not simulated and raise NotSimulated."
)


@dataclass
class StandInUse:
    """What a script did with the stand-in (see :func:`_asked_by_script` for who counts as the script)."""

    imported: bool = False  # the script imported torch_npu
    not_simulated: list[str] = field(default_factory=list)  # what it asked for that is not simulated, first ask first
    depth: str = "shallow"  # "shallow" or "wheel"
    wheel: Any = None  # at depth "wheel": the wheel_depth.WheelDepth behind the stand-in
    ops: Any = None  # at the shallow depth, once the script imported torch_npu: npu_ops' torch.library.Library

    def summary(self) -> dict[str, Any]:
        """JSON-ready: ``{"imported": bool, "not_simulated": [names]}``; at depth "wheel" also ``"depth"`` and
        ``"wheel"``: the torch_npu release, the torch it is built for, the modules loaded from it, the native
        symbols reached that the stub table lacks and the operators its schemas or our reference kernels lack."""
        found: dict[str, Any] = {"imported": self.imported, "not_simulated": list(self.not_simulated)}
        if self.wheel is not None:
            found["depth"] = self.depth
            found["wheel"] = {
                "torch_npu": self.wheel.tree.version,
                "built_for_torch": self.wheel.tree.torch,
                "modules_loaded": len(self.wheel.loaded),
                "missing_stubs": list(self.wheel.missing),
                "schema_failures": list(self.wheel.schema_failures),
            }
        return found


_lock = threading.RLock()
_active: StandInUse | None = None


# ------------------------------------------------------------------------------------------------ who asked
_DEVICE_FILE = str(Path(__file__).parents[1] / "npu" / "device.py")
_MACHINERY = frozenset({__file__, _DEVICE_FILE, importlib.__file__, importlib.util.__file__})
_roots_cache: tuple[int, tuple[str, ...]] = (-1, ())


def _internal_roots() -> tuple[str, ...]:
    """The folders of torch's and this package's imported packages (recomputed when sys.modules grows)."""
    global _roots_cache
    size = len(sys.modules)
    if _roots_cache[0] != size:
        roots: set[str] = set()
        for name, module in list(sys.modules.items()):
            # torch_npu: the stand-in's __path__, empty at the shallow depth, the wheel's tree at the deep one
            if name in ("torch", PACKAGE, "npu_inductor_compat") or name.startswith("npu_inductor_compat."):
                for folder in getattr(module, "__path__", None) or ():
                    roots.add(os.path.join(str(Path(folder)), ""))
        _roots_cache = (size, tuple(sorted(roots)))
    return _roots_cache[1]


def _is_machinery(filename: str) -> bool:
    return filename.startswith("<frozen importlib") or filename in _MACHINERY


def _asked_by_script() -> bool:
    """Whether the code that asked (the first caller outside the import machinery and this stand-in) is the
    script's rather than torch's or this package's.

    Who asked is read from the calling frame: requests made by torch's or this package's own code (their probes of
    ``torch.npu``, this package's look-ups of torch_npu's backend modules) are neither recorded nor served the
    stand-in: until the script has imported it, ``import torch_npu`` from their code fails as it does where
    torch_npu is not installed, so activation still finds the simulated-npu provider and ``importlib.metadata``
    still finds no torch_npu. Anything else (the script, the libraries it uses, code run by ``exec``) counts as the
    script. A request that C code makes on the script's behalf counts as the script's.

    At the deep depth (``depth="wheel"``) torch's and this package's code are served torch_npu too (activation loads
    torch_npu's Inductor backend through it), and torch_npu's own code counts as theirs.
    """
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and _is_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    return not any(filename.startswith(root) for root in _internal_roots())


def _record(name: str) -> None:
    use = _active
    if use is None or name in use.not_simulated or not _asked_by_script():
        return
    with _lock:
        if name not in use.not_simulated:
            use.not_simulated.append(name)


def not_simulated_attribute(qualified: str, name: str) -> NotSimulated:
    """The error for the attribute ``name`` asked of torch_npu or torch.npu (``qualified``: its full name), recorded
    in the active :class:`StandInUse` when the script asked."""
    _record(qualified)
    return NotSimulated(_message(qualified), name=name)


not_simulated.attribute_error = not_simulated_attribute  # device.py raises through it, recorded from now on


# ------------------------------------------------------------------------------------------------ the module
def _missing_from_standin(name: str) -> Any:
    # dunders other than __version__ are Python's own probes (copy, pickle, inspect): plain AttributeError
    if name.startswith("__") and name.endswith("__") and name != "__version__":
        raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}", name=name)
    use = _active
    if use is not None and use.wheel is not None and not _asked_by_script():
        raise use.wheel.missing_stub(f"{PACKAGE}:{name}")  # torch_npu's own code: loud, not an AttributeError
    raise not_simulated_attribute(f"{PACKAGE}.{name}", name)


class _Loader(importlib.abc.Loader):
    """Makes the stand-in module when it is imported (what it is: :func:`torch_npu_standin`).

    At the shallow depth it also offers the fused operators of torch_npu that libraries reach
    (``npu_fusion_attention``, ``npu_rms_norm``, ``npu_rotary_mul``, ``npu_swiglu``, ``_npu_dropout`` and their
    backward operators): real ``npu::`` operators with torch_npu's schemas and CPU reference kernels (npu_ops.py),
    defined while the block runs.
    """

    def __init__(self, wheel: Any = None) -> None:
        self.wheel = wheel

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a plain module; importlib sets __spec__, __loader__, __package__ and __path__ ([])

    def exec_module(self, module: types.ModuleType) -> None:
        from npu_inductor_compat.tools.simulated.npu import device

        device.setup()  # idempotent: a RuntimeError (PrivateUse1 taken by another backend) fails the import
        npu = sys.modules[DEVICE_MODULE]
        module.__doc__ = STANDIN_DOC
        module.npu = npu  # type: ignore[attr-defined]
        setattr(module, MARK, True)
        module.__getattr__ = _missing_from_standin  # type: ignore[method-assign]
        sys.modules[f"{PACKAGE}.npu"] = npu
        if self.wheel is not None:
            self.wheel.enter(module, npu)
        elif _active is not None:  # torch_npu's fused operators, as torch_npu.<name> (torch.ops.npu.<name>)
            import torch

            if _active.ops is None:
                _active.ops = npu_ops.register()
            for name in npu_ops.NAMES:
                setattr(module, name, getattr(torch.ops.npu, name))


def _requested(found: str) -> str:
    """The full module name the import statement asked for (``found`` is the first part no finder had): the name
    the outermost ``_find_and_load`` of importlib is loading, when it extends ``found``."""
    requested = found
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen importlib"):
            name = frame.f_locals.get("name")
            if isinstance(name, str) and name.startswith(found + ".") and len(name) > len(requested):
                requested = name
        frame = frame.f_back
    return requested


class _Finder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path while the stand-in is active: answers for torch_npu and its submodules."""

    def __init__(self, use: StandInUse) -> None:
        self.use = use

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        wheel = self.use.wheel
        if fullname == PACKAGE:
            by_script = _asked_by_script()
            if not by_script and wheel is None:
                # torch and this package see what they see without torch_npu (activation, version reports)
                raise ModuleNotFoundError(f"No module named {PACKAGE!r} (the stand-in serves the script)", name=PACKAGE)
            self.use.imported = self.use.imported or by_script
            return importlib.machinery.ModuleSpec(PACKAGE, _Loader(wheel), origin=ORIGIN, is_package=True)
        if wheel is not None and fullname.partition(".")[0] in wheel.top_level and fullname != PACKAGE:
            spec: importlib.machinery.ModuleSpec = wheel.find_spec(fullname)
            return spec
        if fullname.startswith((f"{PACKAGE}.", f"{DEVICE_MODULE}.")):
            requested = _requested(fullname)
            _record(requested)
            raise NotSimulatedModule(_message(requested), name=requested)
        return None


DEPTHS = ("shallow", "wheel")


@contextlib.contextmanager
def torch_npu_standin(depth: str = "shallow", wheel_version: str | None = None) -> Iterator[StandInUse]:
    """Within the block, ``import torch_npu`` gives the stand-in; yields the :class:`StandInUse` it fills.

    Real Ascend scripts start with ``import torch_npu`` and call ``torch.npu.*`` / ``torch_npu.npu.*``. Within the
    block, ``import torch_npu`` (``import torch_npu.npu``, ``from torch_npu import npu``) gives them a stand-in
    module: never installed (no distribution, nothing on disk; it lives in ``sys.modules`` and ``sys.meta_path`` for
    the block only), marked ``_npu_inductor_compat_standin = True``, without ``__file__``, whose ``npu`` is the
    simulated device's ``torch.npu`` (device.py; importing the stand-in sets the device up). At the shallow depth it
    also offers torch_npu's fused operators that libraries reach (see :class:`_Loader`).

    Everything else of torch_npu (its other operators such as ``torch_npu.npu_format_cast``, ``torch_npu.contrib``,
    unknown ``torch.npu`` names) raises an error naming it: :class:`NotSimulated` for attributes (an AttributeError,
    so ``hasattr`` and ``getattr`` with a default keep working), :class:`NotSimulatedModule` for submodule imports (a
    ModuleNotFoundError). :class:`StandInUse` records whether the script imported torch_npu and every name it asked
    for that is not simulated.

    Two depths, one stand-in. The shallow depth (the default) is the above. The deep one, ``depth="wheel"``, is the
    same stand-in with torch_npu's real pure-Python code behind its ``__path__`` (``wheel_depth.py``): the released
    wheel paired with the installed torch, unpacked (never installed) by ``wheel_release.py``, so
    ``torch_npu._inductor`` and what it imports load from the wheel, native symbols come from the stub table
    (``wheel_stubs.py``), and ``torch_npu`` itself and ``torch_npu.npu`` stay the stand-in and the simulated device.
    The release is ``wheel_version``, by default the one paired with the installed torch
    (``wheel_release.WheelUnavailable`` when there is none or it cannot be downloaded; raised before anything
    changes). At that depth torch's and this package's code are served torch_npu too (see :func:`_asked_by_script`).

    On exit (also when the block raises) ``sys.meta_path`` and the ``torch_npu`` entries of ``sys.modules`` are as
    before (the simulated device the stand-in set up stays, without what torch_npu's code added to it). RuntimeError,
    changing nothing, when torch_npu is already imported in this process (a real one would be shadowed) or a
    stand-in is already active.
    """
    global _active
    if depth not in DEPTHS:
        raise ValueError(f"torch_npu stand-in depth {depth!r}: valid: {', '.join(DEPTHS)}")
    wheel = None
    if depth == "wheel":
        from npu_inductor_compat.tools.simulated.wheel import wheel_depth

        wheel = wheel_depth.depth_for(wheel_version)
    elif wheel_version is not None:
        raise ValueError("torch_npu stand-in: wheel_version is for depth='wheel'")
    with _lock:
        present = sys.modules.get(PACKAGE)
        if _active is not None or getattr(present, MARK, False):
            raise RuntimeError("npu_inductor_compat: the torch_npu stand-in is already active in this process")
        if present is not None:
            raise RuntimeError(
                f"npu_inductor_compat: torch_npu is already imported in this process ({present!r}); the stand-in "
                "would shadow it: run the script in a process that has not imported torch_npu"
            )
        packages = (PACKAGE,) if wheel is None else tuple(wheel.top_level)
        before = {name for name in sys.modules if name.partition(".")[0] in packages}
        use = StandInUse(depth=depth, wheel=wheel)
        finder = _Finder(use)
        sys.meta_path.insert(0, finder)
        _active = use
    try:
        yield use
    finally:
        with _lock:
            _active = None
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if n.partition(".")[0] in packages]:
                if name not in before:
                    del sys.modules[name]
            if wheel is not None:
                wheel.exit(sys.modules.get(DEVICE_MODULE))
            if use.ops is not None:
                use.ops._destroy()
