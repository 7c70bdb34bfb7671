"""The simulated NPU's C++ extension, built once per torch build and source, shared by every venv and checkout.

A build holds a lock naming its pid; a lock whose holder is gone is taken over, and an interrupted build blocks nothing.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools import cache_entry

__all__ = ["CACHE_ENV", "Built", "build_key", "cache_root", "ensure_built", "load"]

CACHE_ENV = "NPU_INDUCTOR_COMPAT_EXTENSION_CACHE"
_COMPLETE = "complete"  # written into a build folder once its library is built: a folder without it is half-built
Note = Callable[[str], None]


class Built:
    """Where a build lives and whether this process made it or found it."""

    def __init__(self, folder: Path, library: Path, reused: bool, seconds: float) -> None:
        self.folder = folder
        self.library = library
        self.reused = reused
        self.seconds = seconds


def cache_root() -> Path:
    """$NPU_INDUCTOR_COMPAT_EXTENSION_CACHE, else ~/.cache/npu-inductor-compat/simulated_npu ($XDG_CACHE_HOME)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser().absolute()
    from npu_inductor_compat.tools.wheel_cache import cache_base

    return cache_base() / "simulated_npu"


def build_key(source: bytes, flags: tuple[str, ...], torch_build: tuple[str, ...]) -> str:
    """A folder name from what the library depends on, never from where the source or the venv lives.

    ``torch_build``: torch's version, git revision, CUDA version and C++ ABI flag (two venvs of one wheel agree)."""
    digest = hashlib.sha256()
    for part in (source, *(p.encode() for p in (*flags, *torch_build, sys.implementation.cache_tag or ""))):
        digest.update(len(part).to_bytes(8, "little") + part)
    version = re.sub(r"[^0-9A-Za-z]+", "_", torch_build[0]).strip("_")
    return f"torch_{version}-{sys.implementation.cache_tag}-{digest.hexdigest()[:16]}"


def _library(folder: Path, name: str) -> Path:
    return folder / f"{name}.so"


def _fingerprint(library: Path) -> str:
    """Size and sha256 of a built library: what the marker records and a later run checks before loading it (a
    truncated library beside its marker crashed every run with SIGBUS, issue #44)."""
    data = library.read_bytes()
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}"


def _damage(folder: Path, name: str) -> str | None:
    """Why ``folder`` holds no finished build to load (None: it does): no folder, not a folder of its own, no
    marker, or a library that is not the one the marker records."""
    if folder.is_symlink():
        return "it is a symbolic link"
    if not folder.is_dir():
        return "no build yet" if not folder.exists() else "it is not a folder"
    marker, library = folder / _COMPLETE, _library(folder, name)
    if not marker.is_file() or marker.is_symlink():
        return "an unfinished build (no marker)"
    if library.is_symlink() or not library.is_file():
        return f"no {library.name} of its own"
    recorded = marker.read_text().splitlines()[1:2]
    if recorded != [_fingerprint(library)]:
        return f"{library.name} is not the library its build recorded (truncated, or changed since)"
    return None


def _complete(folder: Path, name: str) -> bool:
    return _damage(folder, name) is None


def ensure_built(folder: Path, name: str, build: Callable[[Path], Any], what: str, note: Note) -> tuple[Built, Any]:
    """The finished build in ``folder`` and ``build(folder)``'s result (None when an earlier build was found).

    ``build`` writes ``<name>.so`` into the empty ``folder``; a marker is written after it, so whatever stops a build
    half-way (Ctrl-C, a kill) leaves a folder that the next holder of the lock wipes and builds again."""
    start = time.perf_counter()
    if _complete(folder, name):
        return Built(folder, _library(folder, name), True, time.perf_counter() - start), None
    folder.parent.mkdir(parents=True, exist_ok=True)
    with cache_entry.lock(folder.with_name(folder.name + ".lock"), what, note, f"set {CACHE_ENV} to move the cache"):
        damage = _damage(folder, name)
        if damage is None:  # built by the holder we waited for
            return Built(folder, _library(folder, name), True, time.perf_counter() - start), None
        if folder.is_symlink():  # never deleted through: the link alone goes
            note(f"the extension build {folder} is a symbolic link; removing the link and building anew")
            folder.unlink()
        elif folder.exists():  # an interrupted or damaged build (torch's own baton file included): nobody holds it
            if damage != "an unfinished build (no marker)":
                note(f"the extension build in {folder} is damaged ({damage}); building it again")
            if folder.is_dir():
                shutil.rmtree(folder)
            else:
                folder.unlink()
        folder.mkdir()
        note(f"building {what} into {folder} (once per torch build and source: 15-20 s on 2 idle cores) ...")
        result = build(folder)
        if not _library(folder, name).is_file():
            raise RuntimeError(f"building {what} produced no {name}.so in {folder}")
        (folder / _COMPLETE).write_text(f"{os.getpid()}\n{_fingerprint(_library(folder, name))}\n")
    return Built(folder, _library(folder, name), False, time.perf_counter() - start), result


def _torch_build() -> tuple[str, ...]:
    import torch

    abi = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", "")
    return (torch.__version__, str(torch.version.git_version), str(torch.version.cuda), f"cxx11abi={abi}")


def _import(name: str, library: Path) -> types.ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, str(library))
    spec = importlib.util.spec_from_file_location(name, library, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load(source: Path, flags: tuple[str, ...], verbose: bool, note: Note) -> tuple[Any, Built]:
    """Build (or find) the extension for ``source`` with this torch, then import it."""
    key = build_key(source.read_bytes(), flags, _torch_build())
    name = "npu_inductor_compat_simnpu_" + key.rsplit("-", 1)[1]
    folder = cache_root() / key

    def build(target: Path) -> Any:
        try:
            from torch.utils import cpp_extension
        except ModuleNotFoundError as err:  # torch >= 2.9 no longer brings setuptools, which cpp_extension imports
            raise RuntimeError(
                f"the simulated NPU builds a small C++ extension with torch.utils.cpp_extension, which needs "
                f"{err.name}: pip install {err.name}"
            ) from err
        copy = target / source.name  # the build file names this copy, never the checkout it came from
        shutil.copyfile(source, copy)
        return cpp_extension.load(
            name=name, sources=[str(copy)], build_directory=str(target), extra_cflags=list(flags), verbose=verbose
        )

    what = f"the simulated NPU device extension for torch {_torch_build()[0]}"
    built, module = ensure_built(folder, name, build, what, note)
    return (module if module is not None else _import(name, built.library)), built
