"""The dispatcher: a table of torch release ranges → version modules, resolved once, lazily, with importlib."""

from __future__ import annotations

import importlib
import logging
import warnings
from dataclasses import dataclass

from npu_inductor_compat.envflags import env_flag
from npu_inductor_compat.linespec import LineSpec, load_line
from npu_inductor_compat.version import TORCH_VERSION_ENV, Release, TorchVersion, installed_torch, torch_version

log = logging.getLogger("npu_inductor_compat")

STRICT_ENV = "NPU_INDUCTOR_COMPAT_STRICT"


class UnsupportedTorchVersion(ImportError):
    """The installed (or given) torch is outside the range this package supports."""


class UntestedTorchVersionWarning(UserWarning):
    """The torch release is newer than the newest one tested; the newest version module is used."""


class TorchVersionOverrideWarning(UserWarning):
    """NPU_INDUCTOR_COMPAT_TORCH_VERSION names another release than the installed torch; the line follows the
    variable."""


@dataclass(frozen=True)
class Line:
    """One version module and the torch releases it serves: ``first <= release < end``."""

    module: str
    first: Release
    end: Release | None
    summary: str

    def covers(self, release: Release) -> bool:
        return self.first <= release and (self.end is None or release < self.end)

    @property
    def span(self) -> str:
        first = ".".join(map(str, self.first))
        if self.end is None:
            return f">= {first}"
        return f"[{first}, {'.'.join(map(str, self.end))})"


LINES: tuple[Line, ...] = (
    Line(
        "v2_7_1",
        (2, 7, 1),
        (2, 9, 0),
        "torch 2.7.x-2.8.x: flex in kernel/flex_attention.py with a plain backward grid (its own two flex fixes); "
        "unnamed option entries; built-in op overrides loaded before npu registers; no precompiled wrapper header",
    ),
    Line(
        "v2_9",
        (2, 9, 0),
        (2, 12, 0),
        "torch 2.9.x-2.11.x: flex in kernel/flex/ with symbolic grids; unnamed option entries; built-in op overrides "
        "loaded before npu registers; the cpp_wrapper header is precompiled",
    ),
    Line(
        "v2_12",
        (2, 12, 0),
        (2, 15, 0),
        "torch 2.12.x-2.14.x: named (ContextVar) option entries; a per-device benchmarker registry; JIT and AOT C++ "
        "includes asked separately (2.13+)",
    ),
    Line(
        "v2_15",
        (2, 15, 0),
        None,
        "torch 2.15.x and newer: no DEVICE_TO_ATEN (device_to_aten() asks the op overrides); the cpp_wrapper "
        "two-pass check asks the device",
    ),
)

# The oldest supported release line: a removal tag for a release at or below it is stale (tests/test_compat_tags.py).
MIN_SUPPORTED: tuple[int, int] = (LINES[0].first[0], LINES[0].first[1])

# The newest torch minor release the test matrix runs (noxfile.py's TORCH_LINES); anything newer gets a warning.
NEWEST_TESTED: tuple[int, int] = (2, 15)


LINES_START, LINES_END = "<!-- version-lines:start -->", "<!-- version-lines:end -->"


def lines_table() -> str:
    """The README's version-lines table, generated from LINES (tests/test_lines.py keeps the README in step)."""
    rows = ["| module | torch | what differs |", "|---|---|---|"]
    for line in LINES:
        first = ".".join(map(str, line.first[:2])) + ".x"
        if line.end is None:
            span = f"{first} and newer"
        else:
            last_minor = (line.end[0], line.end[1] - 1)
            span = first if last_minor == line.first[:2] else f"{first} - {last_minor[0]}.{last_minor[1]}.x"
        rows.append(f"| `{line.module}` | {span} | {line.summary.split(': ', 1)[-1]} |")
    return "\n".join(rows)


def supported_lines_text() -> str:
    return "; ".join(f"{line.module} for torch {line.span}" for line in LINES)


@dataclass(frozen=True)
class LineChoice:
    """Which version module serves a torch version, and why."""

    line: Line
    version: TorchVersion
    reason: str
    # Set when the release is newer than the newest tested line: the text of the warning resolve() gives.
    untested_warning: str | None = None
    # The installed torch's version when NPU_INDUCTOR_COMPAT_TORCH_VERSION chose instead (None: not overridden, or
    # torch's version cannot be read), and the warning resolve() gives when the two releases differ.
    installed: str | None = None
    override_warning: str | None = None

    @property
    def untested(self) -> bool:
        return self.untested_warning is not None

    @property
    def module_name(self) -> str:
        return f"npu_inductor_compat.{self.line.module}"


def _strict() -> bool:
    return env_flag(STRICT_ENV, default=False)


def choose_line(version: str | None = None) -> LineChoice:
    """Pick the version module for ``version`` (default: the installed torch). Pure: imports nothing."""
    strict = _strict()  # read on every torch: a bad value is an error before it could matter
    found = torch_version(version)
    release = found.release
    build_note = f" (build {found.text!r} treated as release {found.release_text})" if found.mapped else ""
    if release < LINES[0].first:
        raise UnsupportedTorchVersion(
            f"torch {found.text} is older than the oldest supported release "
            f"{'.'.join(map(str, LINES[0].first))}; supported lines: {supported_lines_text()}"
        )
    for line in LINES:
        if line.covers(release):
            break
    else:  # pragma: no cover - the last line is open-ended
        raise AssertionError("LINES must end with an open range")
    reason = f"torch {found.release_text}{build_note} from {found.source} is in {line.span}"
    installed, override_warning = _override_check(found, line)
    if override_warning is not None:
        reason += f"; the installed torch is {installed}"
    message = None
    if release[:2] > NEWEST_TESTED:
        newest = ".".join(map(str, NEWEST_TESTED))
        message = (
            f"torch {found.text} is newer than the newest tested release line {newest}.x; "
            f"using {line.module}, the newest version module"
        )
        if strict:
            raise UnsupportedTorchVersion(
                f"{message}; refused because {STRICT_ENV}=1. Supported: {supported_lines_text()}"
            )
        reason += f"; untested: newer than {newest}.x"
    return LineChoice(line, found, reason, message, installed, override_warning)


def _line_for(release: Release) -> Line | None:
    return next((line for line in LINES if line.covers(release)), None)


def _override_check(found: TorchVersion, line: Line) -> tuple[str | None, str | None]:
    """(installed torch version, warning text) when ``found`` came from the override variable; the warning only when
    the override's release differs from the installed one (``2.7.1`` vs ``2.7.1+cpu`` is the same release)."""
    if found.source != TORCH_VERSION_ENV:
        return None, None
    try:
        installed = installed_torch()
    except (ImportError, ValueError):  # no torch, or a version string that is not one: nothing to compare
        return None, None
    if installed.release == found.release:
        return installed.text, None
    own = _line_for(installed.release)
    if own is None:
        instead = "no line supports the installed torch"
    elif own is line:
        instead = "the installed torch's line too"
    else:
        instead = f"not {own.module}, the installed torch's line"
    return installed.text, (
        f"{TORCH_VERSION_ENV}={found.text} differs from the installed torch {installed.text} (release "
        f"{found.release_text} vs {installed.release_text}); dispatching to {line.module} as the variable says "
        f"({instead})"
    )


def torch_line(version: str | None = None) -> str:
    """The version module name (``"v2_7_1"``, ``"v2_9"``, ``"v2_12"``, ``"v2_15"``) serving ``version`` or the
    installed torch."""
    return choose_line(version).line.module


def resolve() -> tuple[LineChoice, LineSpec]:
    """Choose and import the version module for the installed torch, once per process (kept in STATE); its LINE
    is checked as it loads (linespec.MalformedLineModule names what a malformed one lacks)."""
    from npu_inductor_compat.state import STATE

    with STATE.lock:
        if STATE.resolution is None:
            # Activation needs torch anyway; importing it first makes torch.__version__ the version read and lets
            # torch's logging (TORCH_LOGS) configure our logger before the choice is logged.
            importlib.import_module("torch")
            choice = choose_line()
            if choice.untested_warning:
                warnings.warn(
                    f"npu_inductor_compat: {choice.untested_warning}", UntestedTorchVersionWarning, stacklevel=3
                )
            if choice.override_warning:
                warnings.warn(
                    f"npu_inductor_compat: {choice.override_warning}", TorchVersionOverrideWarning, stacklevel=3
                )
                log.warning("npu_inductor_compat: %s", choice.override_warning)
            spec = load_line(choice.line.module)
            log.info("npu_inductor_compat: using %s (%s)", choice.line.module, choice.reason)
            STATE.resolution = (choice, spec)
        return STATE.resolution


def _forget_resolution() -> None:
    """Tests only: make the next resolve() choose again (for example after changing the env override)."""
    from npu_inductor_compat.state import STATE

    with STATE.lock:
        STATE.resolution = None
