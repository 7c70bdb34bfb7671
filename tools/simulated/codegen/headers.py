"""``codegen --check-headers``: compile generated C++ wrappers with ``g++ -fsyntax-only`` against the real headers."""

from __future__ import annotations

import os
import re
import subprocess
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from npu_inductor_compat.tools import cache_entry
from npu_inductor_compat.tools.simulated.wheel import pairs

INCLUDE_ENV = "NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE"
CANN_ENV = "ASCEND_HOME_PATH"  # CANN's own variable (set_env.sh)
# torch_npu _inductor/cpp_builder.py include_paths(npu=True), the same on 2.7.1.post11, 2.9.0.post9, 2.12.0.post3
CANN_INCLUDES = ("include", "pkg_inc", "pkg_inc/profiling", "include/experiment", "include/experiment/msprof")
DEFINES = ("USE_NPU",)  # torch_npu _inductor/cpp_builder.py get_cpp_torch_device_options for device "npu"
MISSING_HEADER = re.compile(r"fatal error: (?P<header>\S+): No such file or directory")
# Releases of the pairs table (pairs.py) whose headers no C++ is checked against, and why (found by checking the
# wheels: `nox -s torch_npu_survey` downloads them).
NO_LAUNCH_API = {
    "2.8.0.post5": "torch_npu 2.8.0.post5, the 2.8 line, ships ACL headers without aclrtLaunchKernelWithHostArgs and "
    "the aclrtBinary* loader (an older CANN)",
    # 2.9.1 (for torch 2.9.1, a higher version number than 2.9.0.post9 but built months earlier) lacks them too
    "2.9.1": "torch_npu 2.9.1 ships ACL headers without aclrtLaunchKernelWithHostArgs and the aclrtBinary* loader",
}
# The torch_npu release whose headers C++ generated on each torch minor is checked against: the newest build of the
# minor's torch_npu lines in the pairs table that ships the ACL launch API (aclrtLaunchKernelWithHostArgs,
# aclrtBinaryLoadFromData). By minor, not by exact torch: this checks the C++ API (torch_npu's Python never runs).
PAIRED_TORCH_NPU = {pairs.minor(row.torch): row.torch_npu for row in pairs.PAIRS if row.torch_npu not in NO_LAUNCH_API}
# Minors with a torch_npu release but none to check against (2.8), and why.
UNPAIRED = {
    pairs.minor(row.torch): NO_LAUNCH_API[row.torch_npu]
    for row in pairs.PAIRS
    if row.torch_npu in NO_LAUNCH_API and pairs.minor(row.torch) not in PAIRED_TORCH_NPU
}


class HeaderCheckUnavailable(RuntimeError):
    """torch_npu's headers cannot be found or fetched (the message says what was tried)."""


@dataclass(frozen=True)
class HeaderSource:
    include: Path
    description: str  # e.g. "torch_npu 2.9.0.post9 wheel"


def _installed_include() -> Path | None:
    from npu_inductor_compat.common.fixes.cpp_wrapper_launch import installed_torch_npu

    home = installed_torch_npu()
    return None if home is None else Path(home) / "include"


UNPACKED = ".unpacked"  # written last into an unpacked include folder: the list of its files (tools/cache_entry.py)


def _unpack_include(wheel: Path, target: Path) -> None:
    """Unpack the wheel's torch_npu/include into ``target`` whole or not at all: into a scratch folder, listed in
    UNPACKED, then renamed in (the caller holds the entry's lock and has set aside whatever was there)."""
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch, zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith("torch_npu/include/")]
        if not members:
            raise HeaderCheckUnavailable(f"{wheel.name} has no torch_npu/include/")
        archive.extractall(scratch, members)
        unpacked = Path(scratch) / "torch_npu" / "include"
        cache_entry.write_list(unpacked, UNPACKED, {"wheel": wheel.name})
        os.replace(unpacked, target)  # atomic: a half-unpacked folder is never seen


def _wheel_headers(version: str) -> HeaderSource:
    """torch_npu ``version``'s headers, unpacked once from its wheel into the cache and checked against their list
    on each use: a damaged folder (a truncated header, a link) is set aside and unpacked again, never blamed on the
    C++ checked against it (issue #44)."""
    from npu_inductor_compat.tools import wheel_cache

    wheels = wheel_cache.default_cache_dir()
    hint = f"set {wheel_cache.WHEEL_CACHE_ENV} to move the cache, or {INCLUDE_ENV} to use other headers"
    target = wheels.parent / "torch_npu_include" / version
    try:
        cache_entry.ensure(
            target,
            f"torch_npu {version}'s headers",
            lambda: _damage(target, version),
            lambda: _unpack_include(_wheel(version, wheels), target),
            cache_entry.say,
            hint,
        )
    except cache_entry.CacheUnusable as err:
        raise HeaderCheckUnavailable(str(err)) from None
    except wheel_cache.DAMAGED as err:
        raise HeaderCheckUnavailable(
            f"{wheel_cache.damaged(_wheel(version, wheels), err)}; or set {INCLUDE_ENV}"
        ) from err
    except OSError as err:
        raise HeaderCheckUnavailable(
            f"unpacking torch_npu {version}'s headers into {target} failed ({err}); set {INCLUDE_ENV} to its "
            "include dir"
        ) from err
    return HeaderSource(target, f"torch_npu {version} wheel")


def _damage(target: Path, version: str) -> str | None:
    """Why ``target`` is not torch_npu ``version``'s headers as unpacked (None: it is)."""

    def from_its_wheel(listed: dict[str, object]) -> str | None:
        wheel = str(listed.get("wheel", ""))
        if wheel.startswith(f"torch_npu-{version}-"):
            return None
        return f"it was unpacked from {wheel or 'no wheel named'}, not from torch_npu {version}'s"

    return cache_entry.damage(target, UNPACKED, from_its_wheel)


def _wheel(version: str, wheels: Path) -> Path:
    from npu_inductor_compat.tools import wheel_cache

    try:
        return wheel_cache.obtain(version, wheels, cache_entry.say, "for its C++ headers")
    except wheel_cache.SurveyError as err:
        raise HeaderCheckUnavailable(
            f"torch_npu {version}'s headers: {err}; or set {INCLUDE_ENV} to torch_npu's include dir"
        ) from err


def torch_npu_headers(torch_version: str) -> list[HeaderSource]:
    """The torch_npu header trees to check C++ generated with ``torch_version`` against (downloading if needed).

    torch's headers come from the installed torch; torch_npu's (its C++ API and the CANN ACL headers it ships) from,
    in order: ``$NPU_INDUCTOR_COMPAT_TORCH_NPU_INCLUDE``, an installed torch_npu (located, never imported), or the
    PyPI wheels of the torch_npu releases paired with this torch line: downloaded once into the wheel cache
    (``tools/wheel_cache.py``), with their ``torch_npu/include`` unpacked next to it.
    """
    explicit = os.environ.get(INCLUDE_ENV)
    if explicit:
        if not (Path(explicit) / "torch_npu").is_dir():
            raise HeaderCheckUnavailable(f"{INCLUDE_ENV}={explicit} has no torch_npu/ headers")
        return [HeaderSource(Path(explicit), f"{INCLUDE_ENV}={explicit}")]
    installed = _installed_include()
    if installed is not None:
        return [HeaderSource(installed, f"installed torch_npu ({installed})")]
    from npu_inductor_compat.version import parse_release

    minor = ".".join(map(str, parse_release(torch_version)[:2]))
    if minor in UNPAIRED:
        raise HeaderCheckUnavailable(f"no torch_npu release to check torch {minor}'s C++ against: {UNPAIRED[minor]}")
    if minor not in PAIRED_TORCH_NPU:
        newest = pairs.PAIRS[-1]
        raise HeaderCheckUnavailable(
            f"no torch_npu release is paired with torch {minor} (the newest, {newest.torch_npu}, requires torch "
            f"{newest.torch}); set {INCLUDE_ENV}"
        )
    return [_wheel_headers(PAIRED_TORCH_NPU[minor])]


_QUOTES = ['"""']  # how the C++ is quoted: r"""..."""
# COMPAT(>= 2.12): the C++ is quoted r"""...""".
# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: r'''...''' before 2.12
_QUOTES.append("'''")
_CPP_LITERAL = re.compile(
    rf"cpp_wrapper_src = \(\s*r(?P<quote>{'|'.join(_QUOTES)})\n(?P<source>.*?)\n(?P=quote)\s*\)", re.DOTALL
)
# A module whose literal opens with one quote and closes with the other is no Python (torch_npu 2.12.0.post3's C++
# wrapper opens with ''', copied from torch < 2.12, and torch 2.12's closes with """): its C++ is still read, to
# be compared and checked, and the wrapper's summary says the module cannot load.
_MISMATCHED_LITERAL = re.compile(
    r"cpp_wrapper_src = \(\s*r?(?P<open>'''|\"\"\")\n(?P<source>.*?)\n(?P<close>'''|\"\"\")\s*\)\s*\n", re.DOTALL
)


def cpp_source(wrapper: str) -> str:
    """The C++ of a captured C++ wrapper (Inductor wraps it in a Python module that compiles it)."""
    found = _CPP_LITERAL.search(wrapper) or _MISMATCHED_LITERAL.search(wrapper)
    if found is None:
        raise ValueError("no cpp_wrapper_src literal in this wrapper module: not a C++ wrapper?")
    return found.group("source")


def cann_includes() -> list[str]:
    """CANN's include directories as torch_npu's C++ builder adds them, when $ASCEND_HOME_PATH is set."""
    home = os.environ.get(CANN_ENV)
    if not home:
        return []
    return [str(Path(home) / relative) for relative in CANN_INCLUDES if (Path(home) / relative).is_dir()]


def compile_command(source: Path, headers: HeaderSource) -> list[str]:
    """The ``g++ -fsyntax-only`` command that checks ``source`` against ``headers``.

    Each file is compiled as torch_npu's own C++ builder compiles a wrapper for device "npu" (its
    ``_inductor/cpp_builder.py``, which torch_npu's backend puts in place of Inductor's on every paired release):
    ``-DUSE_NPU`` (torch_npu's C shim and AOTI headers declare nothing without it), and, where ``$ASCEND_HOME_PATH``
    names a CANN toolkit, CANN's include directories (:data:`CANN_INCLUDES`). Without CANN, C++ that includes a CANN
    toolkit header the torch_npu wheel does not ship (torch_npu's own wrappers include ``runtime/runtime/rt.h``) stops
    there, and the result says so (:func:`check`).
    """
    from torch.utils.cpp_extension import include_paths

    # the ACL headers sit at include/acl in most wheels, only under include/third_party/acl/inc in some (2.9.1)
    acl = [path for path in (headers.include / "third_party" / "acl" / "inc",) if path.is_dir()]
    includes = [*include_paths(), sysconfig.get_paths()["include"], str(headers.include), *map(str, acl)]
    includes += cann_includes()
    defines = [f"-D{name}" for name in DEFINES]
    return ["g++", _cpp_standard(), "-fsyntax-only", "-w", *defines, *(f"-I{path}" for path in includes), str(source)]


def _cpp_standard() -> str:
    """The C++ standard Inductor itself compiles wrappers with (c++17 up to torch 2.11, c++20 from 2.12)."""
    try:
        from torch._inductor.cpp_builder import _get_cpp_std_cflag

        return f"-{_get_cpp_std_cflag()[0]}"
    except (ImportError, AttributeError, IndexError):
        return "-std=c++17"


def check(source: Path, headers: HeaderSource) -> tuple[bool, str]:
    """(compiles, compiler output) for one C++ file; a header that neither torch, torch_npu's headers nor CANN's
    (when $ASCEND_HOME_PATH is set) provide is named first, with where it would come from."""
    done = subprocess.run(compile_command(source, headers), capture_output=True, text=True, check=False, timeout=600)
    missing = MISSING_HEADER.search(done.stderr)
    if missing is None or done.returncode == 0:
        return done.returncode == 0, done.stderr
    where = (
        f"not under {CANN_ENV}={os.environ[CANN_ENV]} either"
        if os.environ.get(CANN_ENV)
        else f"a CANN toolkit header? torch_npu's C++ builder adds {CANN_ENV}'s {', '.join(CANN_INCLUDES)}: set "
        f"{CANN_ENV} to a CANN toolkit to check past it"
    )
    note = f"missing header {missing.group('header')}: not in torch's or {headers.description}'s headers; {where}\n"
    return False, note + done.stderr
