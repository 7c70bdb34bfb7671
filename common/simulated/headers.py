"""``codegen --check-headers``: compile generated C++ wrappers with ``g++ -fsyntax-only`` against the real headers.

torch's headers come from the installed torch; torch_npu's (its C++ API and the CANN ACL headers it ships) from, in
order: ``$NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE``, an installed torch_npu (located, never imported), or the PyPI
wheel of the torch_npu release paired with this torch line, downloaded once into the cache
(``$NPU_INDUCTOR_COMPAT_CACHE``, default ``~/.cache/npu_inductor_compat``; only ``torch_npu/include`` is kept).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

INCLUDE_ENV = "NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE"
CACHE_ENV = "NPU_INDUCTOR_COMPAT_CACHE"
# The torch_npu release whose headers each version module's C++ is checked against.
PAIRED_TORCH_NPU = {"v2_7_1": "2.7.1.post11", "v2_9": "2.9.0.post9", "v2_12": "2.12.0.post3"}
SIMPLE_INDEX = "https://pypi.org/simple/torch-npu/"
WHEEL_PLATFORM = re.compile(r"-manylinux[^-]*_x86_64\.whl$")


class HeaderCheckUnavailable(RuntimeError):
    """torch_npu's headers cannot be found or fetched (the message says what was tried)."""


@dataclass(frozen=True)
class HeaderSource:
    include: Path
    description: str  # e.g. "torch_npu 2.9.0.post9 wheel (cached)"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "npu_inductor_compat")


def _installed_include() -> Path | None:
    try:
        spec = importlib.util.find_spec("torch_npu")  # top-level lookup: runs no torch_npu code
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        include = Path(location) / "include"
        if (include / "acl" / "acl_rt.h").is_file():
            return include
    return None


def _wheel_url(version: str) -> str:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    request = urllib.request.Request(SIMPLE_INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:  # PEP 691: the index as JSON
        files = json.load(response)["files"]
    for wanted in (tag, "cp311"):  # any CPython wheel carries the same headers
        for entry in files:
            name = entry["filename"]
            if name.startswith(f"torch_npu-{version}-{wanted}-{wanted}-") and WHEEL_PLATFORM.search(name):
                return str(entry["url"])
    raise HeaderCheckUnavailable(f"PyPI lists no manylinux x86_64 wheel of torch_npu {version}")


def _download_include(version: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        wheel = Path(scratch) / "torch_npu.whl"
        with urllib.request.urlopen(_wheel_url(version), timeout=300) as response, wheel.open("wb") as out:
            shutil.copyfileobj(response, out)
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            members = [name for name in archive.namelist() if name.startswith("torch_npu/include/")]
            if not members:
                raise HeaderCheckUnavailable(f"the torch_npu {version} wheel has no torch_npu/include/")
            archive.extractall(unpacked, members)
        os.replace(unpacked / "torch_npu" / "include", target)  # atomic: a half-written cache is never seen


def torch_npu_headers(line: str) -> HeaderSource:
    """Where torch_npu's headers for version module ``line`` are (downloading the paired wheel if needed)."""
    explicit = os.environ.get(INCLUDE_ENV)
    if explicit:
        if not (Path(explicit) / "acl" / "acl_rt.h").is_file():
            raise HeaderCheckUnavailable(f"{INCLUDE_ENV}={explicit} has no acl/acl_rt.h")
        return HeaderSource(Path(explicit), f"{INCLUDE_ENV}={explicit}")
    installed = _installed_include()
    if installed is not None:
        return HeaderSource(installed, f"installed torch_npu ({installed})")
    version = PAIRED_TORCH_NPU.get(line)
    if version is None:
        raise HeaderCheckUnavailable(f"no torch_npu release is paired with {line}; set {INCLUDE_ENV}")
    target = cache_dir() / f"torch_npu-{version}" / "include"
    if (target / "acl" / "acl_rt.h").is_file():
        return HeaderSource(target, f"torch_npu {version} wheel (cached in {target.parent})")
    try:
        _download_include(version, target)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        raise HeaderCheckUnavailable(
            f"downloading torch_npu {version}'s headers failed ({err}); set {INCLUDE_ENV} to a torch_npu include dir"
        ) from err
    return HeaderSource(target, f"torch_npu {version} wheel (downloaded to {target.parent})")


# COMPAT(>= 2.12): the C++ is quoted r"""...""" (r'''...''' before).
# CAN REMOVE when MIN_SUPPORTED >= (2, 12): match only the double quotes.
_CPP_LITERAL = re.compile(r"cpp_wrapper_src = \(\s*r(?P<quote>'''|\"\"\")\n(?P<source>.*?)\n(?P=quote)\s*\)", re.DOTALL)


def cpp_source(wrapper: str) -> str:
    """The C++ of a captured C++ wrapper (Inductor wraps it in a Python module that compiles it)."""
    found = _CPP_LITERAL.search(wrapper)
    if found is None:
        raise ValueError("no cpp_wrapper_src literal in this wrapper module: not a C++ wrapper?")
    return found.group("source")


def compile_command(source: Path, headers: HeaderSource) -> list[str]:
    from torch.utils.cpp_extension import include_paths

    includes = [*include_paths(), sysconfig.get_paths()["include"], str(headers.include)]
    return ["g++", "-std=c++17", "-fsyntax-only", "-w", *(f"-I{path}" for path in includes), str(source)]


def check(source: Path, headers: HeaderSource) -> tuple[bool, str]:
    """(compiles, compiler output) for one C++ file."""
    done = subprocess.run(compile_command(source, headers), capture_output=True, text=True, check=False, timeout=600)
    return done.returncode == 0, done.stderr
