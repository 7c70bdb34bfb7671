"""What the deep torch_npu stand-in's meta-path finder resolves ``torch_npu.*`` to: torch_npu's pure-Python modules
from the unpacked wheel, the stub table's native modules and hollow packages; MissingStub for the rest."""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.kernels import triton_ascend_driver
from npu_inductor_compat.tools.simulated.npu import npu_ops
from npu_inductor_compat.tools.simulated.wheel import pairs, wheel_stubs
from npu_inductor_compat.tools.simulated.wheel.wheel_release import (
    PACKAGE,
    PROVIDER_NAME,
    TOP_LEVEL,
    WheelTree,
    WheelUnavailable,
    paired_release,
    unpacked,
)
from npu_inductor_compat.tools.simulated.wheel.wheel_stubs import HOLLOW, STUBS, Hollow, MissingStub, Stub

__all__ = ["WheelDepth", "depth_for"]


CUSTOM_OPS = "torch_npu.utils.custom_ops"
# torch_npu's Meta kernels for its operators (and a few aten ones), registered at import (torch.library.Library)
META_REGISTRATIONS = "torch_npu.op_plugin.meta._meta_registrations"
_NOTHING = object()


class _StubModule(types.ModuleType):
    """A native module: exactly its stub-table entries; anything else raises MissingStub naming it."""

    def __init__(self, name: str, depth: WheelDepth) -> None:
        super().__init__(name, f"stub of torch_npu's native module {name} (npu_inductor_compat, {PROVIDER_NAME})")
        self.__dict__["_depth"] = depth

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute, name=attribute)
        depth: WheelDepth = self.__dict__["_depth"]
        if depth.has_submodule(self.__name__, attribute):  # `from <hollow package> import <submodule>`: import it
            raise AttributeError(attribute, name=attribute)
        raise depth.missing_stub(f"{self.__name__}:{attribute}")


class _Exec(importlib.abc.Loader):
    """Creates a prepared module (stub or hollow package) and runs nothing."""

    def __init__(self, make: Callable[[str], types.ModuleType]) -> None:
        self.make = make

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.make(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@dataclass
class WheelDepth:
    """The deep stand-in: what ``torch_npu.*`` imports resolve to (see the module docstring). ``torch_npu`` itself
    stays the stand-in (the wheel's ``__init__`` never runs) and ``torch_npu.npu`` the simulated device."""

    tree: WheelTree
    stubs: tuple[Stub, ...] = STUBS
    hollow: tuple[Hollow, ...] = HOLLOW
    missing: list[str] = field(default_factory=list)  # reached but not in the table, first reach first
    loaded: list[str] = field(default_factory=list)  # torch_npu modules loaded from the wheel
    _device_before: dict[str, Any] = field(default_factory=dict)
    _installed: list[tuple[str, Any, str, Any]] = field(default_factory=list)
    _libraries: list[Any] = field(default_factory=list)
    _restore_driver: list[Callable[[], None]] = field(default_factory=list)
    schema_failures: list[str] = field(default_factory=list)  # yaml schemas undefinable; operators not implemented
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._by_module: dict[str, dict[str, Stub]] = {}
        for stub in self.stubs:
            if stub.kind == "attribute":
                self._by_module.setdefault(stub.module, {})[stub.attribute] = stub
            elif stub.kind not in ("schemas", "active-driver"):
                raise ValueError(f"stub {stub.name}: unknown kind {stub.kind!r}")
        self._hollow = {entry.name for entry in self.hollow}
        self._natives = self.tree.native_modules()

    @property
    def top_level(self) -> tuple[str, ...]:
        """The top-level packages this depth serves (torch_npu through the stand-in)."""
        return TOP_LEVEL

    @property
    def path(self) -> list[str]:
        """The stand-in package's ``__path__``: the wheel's torch_npu/."""
        return [str(self.tree.package)]

    def missing_stub(self, qualified: str) -> MissingStub:
        with self._lock:
            if qualified not in self.missing:
                self.missing.append(qualified)
        return MissingStub(
            f"torch_npu {self.tree.version} reached {qualified}, which the stub table of npu_inductor_compat's "
            f"{PROVIDER_NAME} provider does not have (tools/simulated/wheel/wheel_stubs.py STUBS): add a stub modelled "
            "on its real source, or find why this code path is taken"
        )

    # -------------------------------------------------------------------------------------------- set up / undo
    def enter(self, standin: types.ModuleType, device_module: types.ModuleType) -> None:
        """Called when the stand-in package is created: give it the wheel's path; remember the device module; put
        the stubbed modules that are not torch_npu's (triton-ascend's) in place."""
        standin.__path__ = self.path
        # torch_npu/utils/cpp_extension.py derives PYTORCH_NPU_INSTALL_PATH from torch_npu.__file__: the unpacked
        # tree (its __init__.py is never run; include/ and lib/ are not unpacked)
        standin.__file__ = str(self.tree.package / "__init__.py")
        self._device_before = dict(device_module.__dict__)
        for name in self._by_module:
            if not name.startswith(f"{PACKAGE}."):
                self._install(name)
        for stub in self.stubs:
            if stub.kind == "schemas":
                self._libraries.append(stub.value(self))
            elif stub.kind == "active-driver":
                self._restore_driver.append(triton_ascend_driver.activate(stub.value(self)))
        # What torch_npu's package initialisation registers of its operators (torch_npu/_init/core/module_loader.py
        # _load_registration_modules): their Meta kernels (fake-tensor tracing needs them: torch_npu 2.12's backend
        # traces its fused-attention patterns at load, reaching npu::_npu_dropout) and their exposure as
        # torch_npu.<op> (torch.ops.npu.<op>). Its Library objects are destroyed on exit, like the schemas.
        import torch

        for name in (META_REGISTRATIONS, CUSTOM_OPS):
            module = importlib.import_module(name)
            self._libraries.extend(value for value in vars(module).values() if isinstance(value, torch.library.Library))
        # torch_npu's native op-plugin gives its operators their NPU kernels and autograd; the reference kernels of
        # the fused operators libraries reach stand in for them (without, an eager call finds no kernel)
        library, skipped = npu_ops.implement_defined()
        self._libraries.append(library)
        self.schema_failures.extend(f"no reference kernel: {why}" for why in skipped)

    def _install(self, name: str) -> types.ModuleType:
        """A foreign stub module and its missing parents, in sys.modules and as attributes of their parents."""
        present = sys.modules.get(name)
        if present is not None:
            if isinstance(present, _StubModule):
                return present
            raise RuntimeError(f"{PROVIDER_NAME}: {name} is already imported ({present!r}); its stub would shadow it")
        module = self._make_stub_module(name)
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        if parent is None and parent_name:
            with contextlib.suppress(ImportError):
                parent = importlib.import_module(parent_name)
            if parent is None:
                parent = self._install(parent_name)
        if parent is None:
            old: Any = _NOTHING
        elif isinstance(parent, _StubModule):  # a stub parent answers only its table (anything else is MissingStub)
            old = vars(parent).get(child, _NOTHING)
        else:
            old = getattr(parent, child, _NOTHING)
        self._installed.append((name, parent, child, old))
        sys.modules[name] = module
        if parent is not None:
            setattr(parent, child, module)
        # a stub attribute that is itself a stub module of that name is importable as one (torch_npu 2.12.0.post3's
        # npu_triton_helpers.py: `import triton.language.extra.ascend.libdevice as libdevice`)
        for value in vars(module).values():
            submodule = getattr(value, "__name__", None) if isinstance(value, _StubModule) else None
            if submodule is not None and submodule.rpartition(".")[0] == name and submodule not in sys.modules:
                self._installed.append((submodule, None, "", _NOTHING))
                sys.modules[submodule] = value
        return module

    def exit(self, device_module: types.ModuleType | None) -> None:
        """Forget what torch_npu's code added to the simulated device module (torch_npu.npu.<submodules> and the
        attributes it sets, e.g. ``_initialized``) and the foreign stub modules; the stand-in restores the
        torch_npu entries of sys.modules."""
        for name, parent, child, old in reversed(self._installed):
            sys.modules.pop(name, None)
            if parent is not None:
                if old is _NOTHING:
                    with contextlib.suppress(AttributeError):
                        delattr(parent, child)
                else:
                    setattr(parent, child, old)
        self._installed.clear()
        for library in reversed(self._libraries):
            library._destroy()
        self._libraries.clear()
        while self._restore_driver:
            self._restore_driver.pop()()
        before = self._device_before
        if device_module is None or not before:
            return
        for name in [name for name in device_module.__dict__ if name not in before]:
            delattr(device_module, name)
        for name, value in before.items():
            if device_module.__dict__.get(name, value) is not value:
                setattr(device_module, name, value)

    # ---------------------------------------------------------------------------------------------- resolving
    def find_spec(self, fullname: str) -> importlib.machinery.ModuleSpec:
        """The spec for a ``torch_npu.<...>`` module (never ``torch_npu`` itself nor ``torch_npu.npu``) or a module
        of the wheel's other top-level packages (:data:`TOP_LEVEL`)."""
        if fullname in self._hollow:  # its table entries, and its submodules from the wheel
            spec = importlib.machinery.ModuleSpec(fullname, _Exec(self._make_stub_module), is_package=True)
            spec.submodule_search_locations = [str(self._location(fullname))]
            return spec
        if fullname in self._by_module:
            return importlib.machinery.ModuleSpec(fullname, _Exec(self._make_stub_module), is_package=True)
        location = self._location(fullname)
        for candidate, package in ((location / "__init__.py", True), (location.with_suffix(".py"), False)):
            if candidate.is_file():
                found = importlib.util.spec_from_file_location(
                    fullname, candidate, submodule_search_locations=[str(location)] if package else None
                )
                if found is None:  # pragma: no cover - a .py file always has a spec
                    break
                with self._lock:
                    self.loaded.append(fullname)
                return found
        if location.is_dir():  # a folder without __init__.py: a namespace package, as Python would make it
            spec = importlib.machinery.ModuleSpec(fullname, _Exec(types.ModuleType), is_package=True)
            spec.submodule_search_locations = [str(location)]
            return spec
        if fullname in self._natives:
            raise self.missing_stub(fullname)  # a native module of the wheel that the table does not stub
        # not in this release at all (e.g. a module of another release's layout): what torch_npu itself would say
        raise ModuleNotFoundError(f"No module named {fullname!r} (torch_npu {self.tree.version})", name=fullname)

    def has_submodule(self, package: str, name: str) -> bool:
        """Whether the wheel has ``package.name`` as a module or package (for hollow packages)."""
        if package not in self._hollow:
            return False
        location = self._location(f"{package}.{name}")
        return location.with_suffix(".py").is_file() or location.is_dir()

    def _location(self, fullname: str) -> Path:
        return self.tree.root.joinpath(*fullname.split("."))

    def stub_module(self, name: str) -> types.ModuleType:
        """A module that has exactly its stub-table entries (none when the table lists none under its name)."""
        return self._make_stub_module(name)

    def _make_stub_module(self, name: str) -> types.ModuleType:
        module = _StubModule(name, self)
        for attribute, stub in self._by_module.get(name, {}).items():
            setattr(module, attribute, stub.value(self))
        return module


def depth_for(version: str | None = None) -> WheelDepth:
    """The deep stand-in for torch_npu ``version`` (default: the release paired with the installed torch).

    WheelUnavailable when no release is paired, the wheel cannot be had, or it requires another torch release."""
    import torch

    from npu_inductor_compat.version import parse_release

    release = version or paired_release(torch.__version__)
    tree = unpacked(release)
    if parse_release(torch.__version__) != parse_release(tree.torch):  # its _inductor patches that torch's internals
        raise WheelUnavailable(pairs.pair(release).refusal(torch.__version__))
    # the tables as they are now (tests edit them)
    return WheelDepth(tree, stubs=wheel_stubs.STUBS, hollow=wheel_stubs.HOLLOW)
