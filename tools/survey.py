"""`python -m npu_inductor_compat survey`: which of our fixes released torch_npu wheels carry and whether the
torch_npu names we hook exist with the signatures we rely on, read from the wheels (never imported); and the wheel
cache the tools download torch_npu releases into (`fetch`). See docs/torch-npu-survey.md."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from npu_inductor_compat.common.torch_npu_names import TORCH_NPU_HOOKS
from npu_inductor_compat.tools.survey_detectors import FIX_DETECTORS, Finding
from npu_inductor_compat.tools.survey_hooks import check_hook
from npu_inductor_compat.tools.survey_sources import Sources
from npu_inductor_compat.tools.survey_sources import SurveyError as SurveyError  # raised here; the tools catch it

WHEEL_CACHE_ENV = "NPU_INDUCTOR_COMPAT_WHEEL_CACHE"
# torch_npu release lines surveyed by `--all-lines` (the newest wheel of each). torch_npu publishes two 2.9 lines:
# 2.9.0.postN (for torch 2.9.0) and 2.9.1 (for torch 2.9.1, an older and smaller build).
SURVEY_LINES = ("2.7.1", "2.8.0", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0")
# Only the Python sources matter; one platform's wheel is enough.
WHEEL_PLATFORM = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


@functools.cache
def _record_lines() -> dict[str, tuple[str, ...]]:
    """Fix id -> the torch lines its record is written for (imports the fix modules; no torch)."""
    from npu_inductor_compat.registry import fix_records

    return {record.id: record.applies_to() for record in fix_records()}


@dataclass
class ReleaseReport:
    torch_npu: str
    source: str
    torch: str | None
    line: str
    fixes: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def survey(path: Path) -> ReleaseReport:
    """Survey one wheel (or unpacked directory). Raises SurveyError naming the file when it is not usable."""
    sources = Sources(path)
    try:
        report = ReleaseReport(sources.version, str(path), sources.torch, sources.line)
        lines = _record_lines()
        for detector in FIX_DETECTORS:
            try:
                finding = detector.check(sources)
            except SurveyError as err:
                finding = Finding(False, f"could not check: {err}")
            needed = detector.fix_id not in lines or report.line in lines[detector.fix_id]
            report.fixes.append(
                {
                    "id": detector.fix_id,
                    "status": "carried" if finding.carried else "not carried",
                    "needed": needed,
                    "evidence": finding.evidence,
                    "notes": list(finding.notes),
                }
            )
        report.hooks = [check_hook(sources, hook).as_dict() for hook in TORCH_NPU_HOOKS]
        return report
    finally:
        sources.close()


def _release_key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def render(reports: Sequence[ReleaseReport], details: bool = True) -> str:
    ordered = sorted(reports, key=lambda r: _release_key(r.torch_npu))
    head = [f"{r.torch_npu} (torch {r.torch or '?'})" for r in ordered]
    out = ["### Fixes: carried by torch_npu itself?", ""]
    out += ["| fix | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for detector in FIX_DETECTORS:
        cells = []
        for report in ordered:
            fix = next(f for f in report.fixes if f["id"] == detector.fix_id)
            extra = [*fix["notes"], *([] if fix["needed"] else [f"n/a on {report.line}"])]
            cells.append(fix["status"] + (f" ({'; '.join(extra)})" if extra else ""))
        out.append(f"| `{detector.fix_id}` | " + " | ".join(cells) + " |")
    out += ["", "### Hooked torch_npu names: present with the signature we rely on?", ""]
    out += ["| name | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for hook in TORCH_NPU_HOOKS:
        cells = []
        for report in ordered:
            result = next(h for h in report.hooks if h["id"] == hook.id)
            alternative = len(hook.candidates) > 1 and result["found"] not in (None, hook.candidates[0])
            cells.append(result["status"] + (" (alt. layout)" if alternative else ""))
        out.append(f"| `{hook.id}` | " + " | ".join(cells) + " |")
    out += [
        "",
        "n/a: the fix's record is not written for that torch line (torch_npu's torch does not need it). "
        "alt. layout: found at the name's other location (see below).",
    ]
    if not details:
        return "\n".join(out)
    out += ["", "### What is checked", ""]
    out += [f"- `{d.fix_id}` is carried when {d.carried_when}." for d in FIX_DETECTORS]
    out += [f"- `{h.id}`: {' or '.join(f'`{c}`' for c in h.candidates)}; {h.used_by}." for h in TORCH_NPU_HOOKS]
    for report in ordered:
        out += ["", f"### torch_npu {report.torch_npu} (torch {report.torch or '?'}, {report.line})", ""]
        out += [f"- `{f['id']}`: {f['status']}: {f['evidence']}" for f in report.fixes]
        out += [f"- `{h['id']}`: {h['status']}: {h['detail']}" for h in report.hooks]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------- fetching
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
    """The newest wheel in ``cache`` matching ``spec``."""
    found = [path for path in cache.glob("torch_npu-*.whl") if _matches(_wheel_version(path), spec)]
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
    wanted = _release_key(spec)
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


# -------------------------------------------------------------------------------------------------------- CLI
def _inputs(paths: Sequence[Path]) -> list[Path]:
    """Wheels and unpacked trees; a directory without torch_npu/ stands for the wheels in it."""
    found = []
    for path in paths:
        if path.is_dir() and not (path / "torch_npu").is_dir():
            wheels = sorted(path.glob("torch_npu-*.whl"))
            if not wheels:
                raise SurveyError(f"{path}: no torch_npu-*.whl and no torch_npu/ directory in it")
            found += wheels
        elif path.exists():
            found.append(path)
        else:
            raise SurveyError(f"{path}: no such file or directory")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat survey",
        description="Which of our fixes released torch_npu wheels carry, and whether the torch_npu names we hook "
        "exist with the signatures we rely on (read from the wheels' sources; torch_npu is never imported).",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="torch_npu wheels, unpacked trees, or dirs of wheels")
    parser.add_argument(
        "--fetch",
        action="append",
        default=[],
        metavar="SPEC",
        help="download the newest torch_npu of a line ('2.9.0') or an exact version ('2.9.0.post9')",
    )
    parser.add_argument("--all-lines", action="store_true", help=f"--fetch each of {', '.join(SURVEY_LINES)}")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help=f"wheel cache (default: ${WHEEL_CACHE_ENV} or ~/.cache/npu-inductor-compat/torch_npu_wheels)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown, or JSON) here")
    args = parser.parse_args(argv)
    specs = [*args.fetch, *(SURVEY_LINES if args.all_lines else ())]
    if not specs and not args.paths:
        parser.error("give wheels or directories, --fetch SPEC or --all-lines")
    try:
        paths = [fetch(spec, args.cache) for spec in specs] + _inputs(args.paths)
        reports = [survey(path) for path in dict.fromkeys(paths)]
    except SurveyError as err:
        print(f"survey: {err}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps([report.as_dict() for report in reports], indent=2)
        print(text)
    else:
        text = render(reports)
        print(render(reports, details=False))
    if args.out:
        args.out.write_text(text + "\n")
        print(f"\nwritten to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
