"""Where triton-ascend comes from for the kernel checks' worker processes (never this environment's ``triton``):
$NPU_INDUCTOR_COMPAT_TRITON_ASCEND, this environment's ``triton`` when it is triton-ascend, or else the PyPI wheel
installed (``pip install --target``) once into the cache. The user's ``triton`` is never touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SITE_ENV = "NPU_INDUCTOR_COMPAT_TRITON_ASCEND"
TRITON_ASCEND = "3.2.0"  # the release on PyPI (its only one)


class KernelCheckUnavailable(RuntimeError):
    """triton-ascend cannot be found or installed (the message says what was tried)."""


@dataclass(frozen=True)
class TritonAscend:
    site: Path | None  # the directory to put first on the worker's path; None: this environment has it
    version: str
    source: str
    root: Path  # the folder holding its `triton` package, wherever it was found (site, or this environment's)


def _version_in(site: Path) -> str:
    import importlib.metadata

    for distribution in importlib.metadata.distributions(path=[str(site)]):
        if distribution.metadata["Name"].lower().replace("_", "-") == "triton-ascend":
            return str(distribution.version)
    init = site / "triton" / "__init__.py"
    found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", init.read_text()) if init.is_file() else None
    return found.group(1) if found else "unknown"


def is_triton_ascend(site: Path) -> bool:
    return (site / "triton" / "backends" / "ascend" / "compiler.py").is_file()


def locate() -> TritonAscend:
    """Where triton-ascend comes from, installing the wheel into the cache on first use."""
    import importlib.util

    explicit = os.environ.get(SITE_ENV)
    if explicit:
        site = Path(explicit)
        if not is_triton_ascend(site):
            raise KernelCheckUnavailable(f"{SITE_ENV}={explicit} has no triton/backends/ascend/compiler.py")
        return TritonAscend(site, _version_in(site), f"{SITE_ENV}={explicit}", site)
    spec = importlib.util.find_spec("triton")  # locates the package; runs none of it
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = Path(location).parent
        if is_triton_ascend(found):
            return TritonAscend(None, _version_in(found), "this environment's triton", found)
    return _cached_install()


def _cached_install() -> TritonAscend:
    """The wheel installed once into the cache, under the entry's lock (two runs at once: one installs, the other
    waits), checked against pip's RECORD before each use and installed again when damaged (issue #44)."""
    from npu_inductor_compat.tools import cache_entry, wheel_cache

    root = wheel_cache.default_cache_dir().parent / "triton_ascend" / TRITON_ASCEND
    source = f"triton-ascend {TRITON_ASCEND} wheel ({root})"
    hint = f"set {SITE_ENV} to a directory holding triton-ascend, or {wheel_cache.WHEEL_CACHE_ENV} to move the cache"
    try:
        what = f"the triton-ascend {TRITON_ASCEND} install"
        cache_entry.ensure(root, what, lambda: _install_damage(root), lambda: _install(root), cache_entry.say, hint)
    except cache_entry.CacheUnusable as err:
        raise KernelCheckUnavailable(str(err)) from None
    return TritonAscend(root, _version_in(root), source, root)


def _install_damage(root: Path) -> str | None:
    if root.is_symlink():
        return "it is a symbolic link"
    if not os.path.lexists(root):
        return "it is missing"
    if not is_triton_ascend(root):
        return "it has no triton/backends/ascend/compiler.py"
    return installed_damage(root)


def _install(root: Path) -> None:
    from npu_inductor_compat.tools import cache_entry, wheel_cache

    cache_entry.say(
        f"installing triton-ascend {TRITON_ASCEND} (about 55 MB, with pybind11) into {root}, once; the environment's "
        "triton is not touched"
    )
    partial = root.with_name(root.name + ".partial")
    if partial.is_symlink() or partial.is_file():
        partial.unlink()
    elif partial.exists():
        shutil.rmtree(partial)  # an install cut short (we hold the lock: nobody else writes there)
    command = [*wheel_cache._pip(), "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"]
    command += [str(partial), f"triton-ascend=={TRITON_ASCEND}", "pybind11"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired, wheel_cache.SurveyError) as err:
        raise KernelCheckUnavailable(f"installing triton-ascend failed: {err}; set {SITE_ENV}") from err
    if done.returncode != 0 or not is_triton_ascend(partial):
        raise KernelCheckUnavailable(
            f"installing triton-ascend {TRITON_ASCEND} failed ({done.stderr.strip()[-500:]}); set {SITE_ENV} to a "
            "directory holding it"
        )
    os.replace(partial, root)  # a half-installed directory is never taken for a finished one


def worker_env(triton_ascend: TritonAscend) -> dict[str, str]:
    """This process's environment, with triton-ascend's directory first on the worker's path; without
    TRITON_INTERPRET (set for codegen --execute's interpreter), as the worker compiles."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if triton_ascend.site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_ascend.site), env.get("PYTHONPATH")]))
    return env


def confine_triton(env: dict[str, str], folder: str) -> None:
    """Triton's own cache and a debug compile's stage dumps (triton/runtime/cache.py: TRITON_CACHE_DIR,
    TRITON_DUMP_DIR, else under ~/.triton) go into the worker's ``folder``, never the user's home."""
    env["TRITON_CACHE_DIR"] = os.path.join(folder, "triton-cache")
    env["TRITON_DUMP_DIR"] = os.path.join(folder, "triton-dump")


def installed_damage(root: Path) -> str | None:
    """Why the install in ``root`` is not what pip wrote (None: every file its RECORDs list is there, of the recorded
    size): a truncated libtriton.so killed every worker with SIGBUS and no message (issue #44). Sizes only, so each
    use costs a stat per file."""
    records = sorted(root.glob("*.dist-info/RECORD"))
    if not records:
        return "no dist-info RECORD"
    for record in records:
        for row in record.read_text().splitlines():
            path, _, rest = row.partition(",")
            size = rest.rpartition(",")[2]
            if not size.isdigit() or path.startswith("../"):  # scripts: pip --target puts them elsewhere
                continue
            target = root / path
            if target.is_symlink() or not target.is_file():
                return f"{path} is missing, or not a file of its own"
            if target.stat().st_size != int(size):
                return f"{path} is {target.stat().st_size} bytes, its RECORD says {size}"
    return None
