"""The torch release lines: ``LINES``, the one table of version modules and the releases each serves, and the
choice of one (`LineChoice`). Pure data: dispatch chooses from it, the journal and the registry read it."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from npu_inductor_compat.version import Release, TorchVersion


@dataclass(frozen=True)
class Line:
    """One version module and the torch releases it serves, as a packaging specifier set (``>=2.9.0,<2.12.0``: one
    ``>=`` lower bound, at most one ``<`` upper bound); a release is matched without its pre, dev, post or local."""

    module: str
    releases: SpecifierSet
    summary: str

    def __post_init__(self) -> None:
        operators = sorted(spec.operator for spec in self.releases)
        if operators not in ([">="], ["<", ">="]):
            raise ValueError(
                f"{self.module}: releases {str(self.releases)!r} must be '>=X.Y.Z' or '>=X.Y.Z,<X.Y.Z', "
                f"not operators {operators}"
            )

    def _bound(self, operator: str) -> Specifier | None:
        return next((spec for spec in self.releases if spec.operator == operator), None)

    @property
    def first(self) -> Release:
        return _release(self.first_text)

    @property
    def first_text(self) -> str:
        """The lower bound as written: ``2.7.1``."""
        lower = self._bound(">=")
        assert lower is not None  # __post_init__ checked it
        return lower.version

    @property
    def end(self) -> Release | None:
        upper = self._bound("<")
        return None if upper is None else _release(upper.version)

    def covers(self, release: Release) -> bool:
        return self.releases.contains(Version("{}.{}.{}".format(*release)))

    @property
    def span(self) -> str:
        """The specifier set, lower bound first: ``>=2.9.0,<2.12.0``."""
        return ",".join(str(spec) for spec in (self._bound(">="), self._bound("<")) if spec is not None)


def _release(text: str) -> Release:
    major, minor, micro = (*Version(text).release, 0, 0)[:3]
    return (major, minor, micro)


LINES: tuple[Line, ...] = (
    Line(
        "v2_7_1",
        SpecifierSet(">=2.7.1,<2.9.0"),
        "torch 2.7.x-2.8.x: flex in kernel/flex_attention.py with a plain backward grid (its own two flex fixes); "
        "on 2.7.x an in-place reuse check that trips on removed users; unnamed option entries; built-in op "
        "overrides loaded before npu registers; no precompiled wrapper header",
    ),
    Line(
        "v2_9",
        SpecifierSet(">=2.9.0,<2.12.0"),
        "torch 2.9.x-2.11.x: flex in kernel/flex/ with symbolic grids; unnamed option entries; built-in op overrides "
        "loaded before npu registers; the cpp_wrapper header is precompiled",
    ),
    Line(
        "v2_12",
        SpecifierSet(">=2.12.0,<2.15.0"),
        "torch 2.12.x-2.14.x: named (ContextVar) option entries; a per-device benchmarker registry; JIT and AOT C++ "
        "includes asked separately (2.13+)",
    ),
    Line(
        "v2_15",
        SpecifierSet(">=2.15.0"),
        "torch 2.15.x and newer: no DEVICE_TO_ATEN (device_to_aten() asks the op overrides); the cpp_wrapper "
        "two-pass check asks the device",
    ),
)

# The oldest supported release line: a removal tag for a release at or below it is stale
# (tests/dev/test_compat_tags.py).
MIN_SUPPORTED: tuple[int, int] = (LINES[0].first[0], LINES[0].first[1])

# The newest torch minor release the test matrix runs (noxfile.py's TORCH_LINES); anything newer gets a warning.
NEWEST_TESTED: tuple[int, int] = (2, 15)


LINES_START, LINES_END = "<!-- version-lines:start -->", "<!-- version-lines:end -->"


def lines_table() -> str:
    """docs/fixes.md's version-lines table, generated from LINES (tests/compat/test_lines.py keeps the doc in step)."""
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
    # The installed torch's own line when the override chose another one: activate() refuses to apply a line to a
    # torch it was not written for (None: no override, the same line, or no line supports the installed torch).
    installed_line: Line | None = None

    @property
    def untested(self) -> bool:
        return self.untested_warning is not None
