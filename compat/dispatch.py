"""The dispatcher: the version module for a torch release, chosen from ``lines.LINES`` and loaded (its LINE
checked) once, lazily, with importlib."""

from __future__ import annotations

import importlib
import logging
import warnings

from npu_inductor_compat import lines
from npu_inductor_compat.envflags import env_flag
from npu_inductor_compat.lines import Line, LineChoice, supported_lines_text
from npu_inductor_compat.linespec import LineSpec, line_spec
from npu_inductor_compat.version import TORCH_VERSION_ENV, Release, TorchVersion, installed_torch, torch_version

log = logging.getLogger("npu_inductor_compat")

STRICT_ENV = "NPU_INDUCTOR_COMPAT_STRICT"
PACKAGE = "npu_inductor_compat"  # the version modules are its subpackages


def load_line(name: str) -> LineSpec:
    """Import the version module ``name`` (a module of LINES, e.g. "v2_12") and return its checked LINE."""
    return line_spec(importlib.import_module(f"{PACKAGE}.{name}"))


class UnsupportedTorchVersion(ImportError):
    """The installed (or given) torch is outside the range this package supports."""


class UntestedTorchVersionWarning(UserWarning):
    """The torch release is newer than the newest one tested; the newest version module is used."""


class TorchVersionOverrideWarning(UserWarning):
    """NPU_INDUCTOR_COMPAT_TORCH_VERSION names another release than the installed torch; the line follows the
    variable."""


def _strict() -> bool:
    return env_flag(STRICT_ENV, default=False)


def choose_line(version: str | None = None) -> LineChoice:
    """Pick the version module for ``version`` (default: the installed torch). Pure: imports nothing."""
    strict = _strict()  # read on every torch: a bad value is an error before it could matter
    found = torch_version(version)
    release = found.release
    build_note = f" (build {found.text!r} treated as release {found.release_text})" if found.mapped else ""
    if release < lines.LINES[0].first:
        raise UnsupportedTorchVersion(
            f"torch {found.text} is older than the oldest supported release "
            f"{lines.LINES[0].first_text}; supported lines: {supported_lines_text()}"
        )
    for line in lines.LINES:
        if line.covers(release):
            break
    else:  # pragma: no cover - the last line is open-ended
        raise AssertionError("LINES must end with an open range")
    reason = f"torch {found.release_text}{build_note} from {found.source} is in {line.span}"
    installed, override_warning = _override_check(found, line)
    installed_line = _installed_line(found, line)
    if override_warning is not None:
        reason += f"; the installed torch is {installed}"
    message = None
    if release[:2] > lines.NEWEST_TESTED:
        newest = ".".join(map(str, lines.NEWEST_TESTED))
        message = (
            f"torch {found.text} is newer than the newest tested release line {newest}.x; "
            f"using {line.module}, the newest version module"
        )
        if strict:
            raise UnsupportedTorchVersion(
                f"{message}; refused because {STRICT_ENV}=1. Supported: {supported_lines_text()}"
            )
        reason += f"; untested: newer than {newest}.x"
    return LineChoice(line, found, reason, message, installed, override_warning, installed_line)


def _line_for(release: Release) -> Line | None:
    return next((line for line in lines.LINES if line.covers(release)), None)


def _installed_line(found: TorchVersion, line: Line) -> Line | None:
    """The installed torch's line when the override variable chose another one (else None)."""
    if found.source != TORCH_VERSION_ENV:
        return None
    try:
        own = _line_for(installed_torch().release)
    except (ImportError, ValueError):
        return None
    return None if own is line else own


def refuse_a_foreign_line(choice: LineChoice) -> None:
    """UnsupportedTorchVersion when the override variable chose a line the installed torch is not in: its records
    patch code that torch does not have (2.7.1's config entries on torch 2.12: a TypeError half-way)."""
    own = choice.installed_line
    if own is None:
        return
    raise UnsupportedTorchVersion(
        f"{TORCH_VERSION_ENV}={choice.version.text} chooses {choice.line.module} (torch {choice.line.span}), which "
        f"does not fit the installed torch {choice.installed} ({own.module}, torch {own.span}); nothing applied. "
        f"Valid: a version in {own.span} (another build or release of the installed torch's line), or unset it"
    )


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
