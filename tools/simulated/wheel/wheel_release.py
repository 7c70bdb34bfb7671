"""The torch_npu releases the torch_npu-wheel provider runs, and their wheels' pure-Python trees: downloaded once
into the survey's cache, never installed (no native code, no metadata), unpacked once, atomically."""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from npu_inductor_compat.tools.simulated.wheel import pairs

__all__ = [
    "NOT_YET",
    "PACKAGE",
    "PAIRED",
    "PROVIDER_NAME",
    "STUBBED",
    "TOP_LEVEL",
    "WheelTree",
    "WheelUnavailable",
    "paired_release",
    "unpacked",
]


PACKAGE = "torch_npu"
# The wheel's top-level packages: torch_npu, and torchnpugen (its code generator's tables, pure Python; torch_npu's
# lowering reads torchnpugen.aoti.fallback_ops)
TOP_LEVEL = (PACKAGE, "torchnpugen")
PROVIDER_NAME = "torch_npu-wheel"
# The torch_npu releases whose _inductor this provider runs: its stubs and RELEASES are checked against these wheels
# only. Each runs on exactly the torch its wheel's metadata requires (pairs.py), never on another patch release.
# 2.13.0 and 2.14.0 import with the same named stubs as 2.12.0.post3 (none added: their _inductor reaches no other
# native symbol on the codegen path).
STUBBED = (
    "2.7.1.post11",
    "2.8.0.post5",
    "2.9.0.post9",
    "2.9.1",
    "2.10.0.post7",
    "2.11.0.post3",
    "2.12.0.post3",
    "2.13.0",
    "2.14.0",
)
# torch release -> the stubbed torch_npu release that requires it, e.g. "2.9.0" -> "2.9.0.post9" (from pairs.py)
PAIRED: dict[str, str] = {pairs.pair(release).torch: release for release in STUBBED}
# Stubbed releases that do not run yet, and why (torch_npu release -> reason).
NOT_YET: dict[str, str] = {}
UNPACKED_DIR = "torch_npu_python"  # beside the survey's wheel cache: <cache>/../torch_npu_python/<version>/torch_npu


class WheelUnavailable(RuntimeError):
    """No torch_npu wheel is paired with this torch, or it cannot be downloaded or unpacked (the message says)."""


def paired_release(torch_version: str) -> str:
    """The stubbed torch_npu release that requires exactly ``torch_version``'s release; WheelUnavailable saying why
    there is none (for another patch release of a stubbed release's minor: the torch to install instead)."""
    from npu_inductor_compat.version import parse_release

    release = ".".join(map(str, parse_release(torch_version)))
    stubbed = f"stubbed: {', '.join(f'{npu} on torch {torch}' for torch, npu in PAIRED.items())}"
    if release in PAIRED and PAIRED[release] not in NOT_YET:
        return PAIRED[release]
    reasons = [f"torch_npu {npu}: {NOT_YET[npu]}" for npu in NOT_YET if pairs.pair(npu).torch == release]
    reasons += [
        f"torch_npu {row.torch_npu} (for torch {release}) is not stubbed yet"
        for row in pairs.for_torch(release)
        if row.torch_npu not in STUBBED and row.torch_npu not in NOT_YET
    ]
    refusals = [
        pairs.pair(npu).refusal(torch_version)
        for torch, npu in PAIRED.items()
        if pairs.minor(torch) == pairs.minor(release) and torch != release
    ]
    if not reasons and not refusals:
        reasons = [f"torch {torch_version}: no torch_npu release is paired with torch {release}"]
    # a refusal names the torch to install; otherwise the message names the pairs that run
    raise WheelUnavailable("; ".join(reasons + refusals) if refusals else f"{'; '.join(reasons)} ({stubbed})")


@dataclass(frozen=True)
class WheelTree:
    """An unpacked torch_npu wheel's pure-Python tree."""

    version: str  # torch_npu's, e.g. "2.7.1.post11"
    torch: str  # the torch release it is built for (its Requires-Dist), e.g. "2.7.1"
    root: Path  # holds torch_npu/

    @property
    def package(self) -> Path:
        return self.root / PACKAGE

    def native_modules(self) -> frozenset[str]:
        """The extension modules the wheel ships (never unpacked), e.g. ``torch_npu._C``."""
        return frozenset((self.root / NATIVE_LIST).read_text().split())


def _keep(member: str) -> bool:
    """The wheel members unpacked: torch_npu's (and torchnpugen's) Python modules and data files, never native code
    or metadata."""
    if not member.startswith(tuple(f"{name}/" for name in TOP_LEVEL)) or member.endswith("/"):
        return False
    if member.startswith((f"{PACKAGE}/include/", f"{PACKAGE}/lib/", f"{PACKAGE}/bin/")):
        return False
    name = member.rsplit("/", 1)[-1]
    return not (name.endswith((".so", ".a", ".pyd", ".dll")) or ".so." in name)


NATIVE_LIST = "NATIVE_MODULES"  # in the unpacked tree: the extension modules the wheel has (not unpacked)


def _native_module(member: str) -> str | None:
    """``torch_npu._C`` for ``torch_npu/_C.cpython-311-x86_64-linux-gnu.so``; None for anything else."""
    found = re.fullmatch(r"((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*)\.(?:cpython-[^/]*|abi3)\.so", member)
    if found is None or not member.startswith(tuple(f"{name}/" for name in TOP_LEVEL)):
        return None
    return found.group(1).replace("/", ".")


def _torch_requirement(archive: zipfile.ZipFile, version: str) -> str:
    """The torch release the wheel requires, as pairs.py names it (the wheel's pin must be the table's)."""
    found = [name for name in archive.namelist() if re.fullmatch(r"torch_npu-[^/]+\.dist-info/METADATA", name)]
    if not found:
        raise WheelUnavailable(f"torch_npu {version}: the wheel has no dist-info/METADATA")
    try:
        pin, row = pairs.requires_torch(archive.read(found[0]).decode("utf-8")), pairs.pair(version)
    except ValueError as err:
        raise WheelUnavailable(f"torch_npu {version}: {err}") from err
    if pin != row.pin:
        raise WheelUnavailable(f"torch_npu {version}: its metadata requires {pin}, pairs.py says {row.pin}")
    return row.torch


FILES = "FILES"  # written last into an unpacked tree: the list of its files (tools/cache_entry.py)


def unpacked(version: str, announce: Callable[[str], None] | None = None) -> WheelTree:
    """The pure-Python tree of torch_npu ``version``: downloaded (once, into the survey's cache) and unpacked (once,
    atomically: a half-unpacked tree is never seen) into ``<cache>/../torch_npu_python/<version>``; checked against
    its list of files and its release on each use, and unpacked again when damaged (issue #44)."""
    from npu_inductor_compat.tools import cache_entry
    from npu_inductor_compat.tools import wheel_cache as survey

    say = announce or cache_entry.say
    wheels = survey.default_cache_dir()
    target = wheels.parent / UNPACKED_DIR / version
    hint = f"set {survey.WHEEL_CACHE_ENV} to move the cache"
    try:
        cache_entry.ensure(
            target,
            f"torch_npu {version}'s Python tree",
            lambda: _problem(version, target),
            lambda: _unpack(version, _wheel(version, wheels, say), target),
            say,
            hint,
        )
    except cache_entry.CacheUnusable as err:
        raise WheelUnavailable(f"torch_npu {version}: {err}") from None
    return WheelTree(version, pairs.pair(version).torch, target)


def _wheel(version: str, wheels: Path, say: Callable[[str], None]) -> Path:
    from npu_inductor_compat.tools import wheel_cache as survey

    try:
        return survey.obtain(version, wheels, say, "for its Python tree")
    except survey.SurveyError as err:
        raise WheelUnavailable(f"torch_npu {version}: {err}") from err


def _unpack(version: str, wheel: Path, target: Path) -> None:
    """The wheel's pure-Python files into a scratch folder, listed, then renamed to ``target`` (the caller holds
    the entry's lock and has set aside whatever was there)."""
    from npu_inductor_compat.tools import cache_entry
    from npu_inductor_compat.tools import wheel_cache as survey

    try:
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch, zipfile.ZipFile(wheel) as archive:
            torch = _torch_requirement(archive, version)
            archive.extractall(scratch, [name for name in archive.namelist() if _keep(name)])
            natives = sorted(filter(None, map(_native_module, archive.namelist())))
            (Path(scratch) / NATIVE_LIST).write_text("".join(f"{name}\n" for name in natives))
            (Path(scratch) / "TORCH_REQUIREMENT").write_text(torch + "\n")
            cache_entry.write_list(Path(scratch), FILES, {"wheel": wheel.name})
            os.replace(scratch, target)
            os.mkdir(scratch)  # TemporaryDirectory removes its (now moved) directory on exit
    except survey.DAMAGED as err:
        raise WheelUnavailable(f"torch_npu {version}: {survey.damaged(wheel, err)}") from err
    except OSError as err:
        raise WheelUnavailable(f"torch_npu {version}: cannot unpack {wheel}: {err}") from err


VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def _problem(version: str, target: Path) -> str | None:
    """Why the tree in ``target`` is not torch_npu ``version``'s, as unpacked (None: it is): its list of files (each
    there, of its size), its marker naming the torch the release requires, its torch_npu/version.py."""
    from npu_inductor_compat.tools import cache_entry

    damage = cache_entry.damage(target, FILES)
    if damage is not None:
        return damage
    marker = target / "TORCH_REQUIREMENT"
    torch = marker.read_text().strip() if marker.is_file() else ""
    if torch != pairs.pair(version).torch:
        return f"its TORCH_REQUIREMENT says {torch!r}, the release requires {pairs.pair(version).torch!r}"
    version_file = target / PACKAGE / "version.py"
    found = VERSION_LINE.search(version_file.read_text()) if version_file.is_file() else None
    if found is None or found.group(1) != version:
        return f"its torch_npu/version.py says {found.group(1) if found else 'nothing'!r}"
    return None
