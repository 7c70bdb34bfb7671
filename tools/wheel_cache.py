"""The torch_npu wheel cache: released wheels downloaded (never installed) once, for the survey and the simulated
NPU's tools; and where this project's caches live."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from packaging.version import InvalidVersion, Version

from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    SurveyError as SurveyError,  # raised here; callers catch it
)

WHEEL_CACHE_ENV = "NPU_INDUCTOR_COMPAT_WHEEL_CACHE"
# Only the Python sources matter; one platform's wheel is enough.
WHEEL_PLATFORM = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


# what reading a truncated or corrupt wheel raises: no central directory, a member cut short, a bad CRC or stream
DAMAGED = (zipfile.BadZipFile, EOFError, zlib.error)


def damaged(wheel: Path, err: BaseException) -> str:
    """The error for a cached wheel that cannot be read: which file to delete (the next run downloads it again)."""
    return f"the cached wheel {wheel} is damaged ({type(err).__name__}: {err}): delete it, and it is downloaded again"


def release_key(version: str) -> Version:
    """``version`` as a Version to sort by; an unparsable one sorts first."""
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def cache_base() -> Path:
    """Where this project's caches live by default: $XDG_CACHE_HOME/npu-inductor-compat, else ~/.cache/...."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "npu-inductor-compat"


def default_cache_dir() -> Path:
    configured = os.environ.get(WHEEL_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return cache_base() / "torch_npu_wheels"


def _wheel_version(path: Path) -> str:
    return path.name.split("-")[1] if path.name.count("-") >= 4 else ""


def _matches(version: str, spec: str) -> bool:
    """``spec`` "2.9.0" is a line (2.9.0 and its post releases); "2.9.0.post9" an exact version."""
    try:
        wanted, got = Version(spec), Version(version)
    except InvalidVersion:
        return False
    if wanted.post is not None or wanted.pre is not None or wanted.dev is not None:
        return got == wanted
    return got.release == wanted.release and got.pre is None and got.dev is None


def cached_wheel(spec: str, cache: Path) -> Path | None:
    """The newest wheel in ``cache`` matching ``spec``. Only a regular file counts: anything else under a wheel's name
    (a FIFO would block the zip reader forever, a link may point anywhere) is a SurveyError naming it (issue #44)."""
    found = [path for path in cache.glob("torch_npu-*.whl") if _matches(_wheel_version(path), spec)]
    for path in found:
        if not stat.S_ISREG(path.lstat().st_mode):
            raise SurveyError(f"{path} is not a regular file (a link, a FIFO?): remove it; the wheel is fetched again")
    return max(found, key=lambda path: Version(_wheel_version(path)), default=None)


def published_size(version: str, timeout: float = 10) -> int | None:
    """Bytes of the torch_npu ``version`` wheel pip would download (PyPI's JSON API, the platform in WHEEL_PLATFORM),
    or None when PyPI cannot be asked: only used to announce a download."""
    import urllib.request

    python_tag = "cp" + WHEEL_PLATFORM[1].replace(".", "")
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/torch-npu/{version}/json", timeout=timeout) as answer:
            files = json.load(answer).get("urls", [])
    except (OSError, ValueError):
        return None
    for item in files:
        name = str(item.get("filename", ""))
        if f"-{python_tag}-" in name and "x86_64" in name and isinstance(item.get("size"), int):
            return int(item["size"])
    return None


def _pip() -> list[str]:
    # Asked of the distribution metadata: importlib.util.find_spec("pip") would run setuptools' distutils hack,
    # which then breaks any later `import setuptools` (torch.utils.cpp_extension) in this process when pip is absent.
    try:
        importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise SurveyError("no pip to download torch_npu wheels with (install pip, or pass wheel files)")


def fetch(spec: str, cache: Path | None = None, timeout: float = 1800) -> Path:
    """Download (never install) the newest torch_npu wheel matching ``spec`` into the cache, once; its path.

    An exact version already cached is used without asking the index; a line is re-resolved (pip skips a file it
    already has). When the download fails, the newest cached match is used with a warning, else SurveyError.
    """
    cache = cache or default_cache_dir()
    wanted = release_key(spec)
    exact = wanted.post is not None or wanted.pre is not None or wanted.dev is not None
    cached = cached_wheel(spec, cache) if exact else None
    if cached is not None:
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    requirement = f"torch_npu=={spec}" if exact else f"torch_npu=={spec}.*"
    command = [*_pip(), "download", "--no-deps", "--only-binary=:all:", *WHEEL_PLATFORM, "-d", str(cache)]
    command += ["--disable-pip-version-check", "--quiet", requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        problem = "" if done.returncode == 0 else (done.stderr or done.stdout).strip()[-1500:]
    except (OSError, subprocess.TimeoutExpired) as err:
        problem = str(err)
    found = cached_wheel(spec, cache)
    if problem and found is not None:
        print(f"survey: pip download {requirement} failed; using cached {found.name}: {problem}", file=sys.stderr)
    if found is None:
        raise SurveyError(f"could not download {requirement} into {cache}: {problem or 'no matching wheel'}")
    return found


def obtain(version: str, cache: Path, say: Callable[[str], None], purpose: str) -> Path:
    """torch_npu ``version``'s wheel: the cached one, else downloaded into ``cache`` once, saying so first (how big,
    and ``purpose``, e.g. "for its C++ headers"). SurveyError when neither works (a link or a FIFO under its name)."""
    cached = cached_wheel(version, cache)
    if cached is not None:
        return cached
    size = published_size(version)
    how_big = f"{size / 1e6:.0f} MB" if size else "size unknown"
    say(f"downloading the torch_npu {version} wheel ({how_big}) into {cache}, once, {purpose} (never installed) ...")
    return fetch(version, cache)
