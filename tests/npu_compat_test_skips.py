"""Skips: each names a reason from one list; a skip whose message fits none fails the run. The run ends with the
count per reason (one JSON line appended to $NPU_INDUCTOR_COMPAT_SKIP_COUNTS, when set: CI's summary). Loaded by
conftest.py as the plugin ``npu_compat_test_skips``."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from typing import Any

import pytest
from npu_compat_test_tiers import selects_by_mark  # tests/npu_compat_test_tiers.py, loaded first by conftest.py

# reason -> what a skip message for it looks like. A new kind of skip is added here, on purpose, or it fails.
REASONS: dict[str, tuple[str, ...]] = {
    # the torch_npu-wheel provider runs torch_npu only on the exact torch its wheel requires (pairs.py)
    "no torch_npu release for this torch": (
        r"^no torch_npu release to run on this torch: ",
        r"^no torch_npu release is paired with torch ",
        r"^no torch_npu headers to build the emulated runtime against: ",
    ),
    # the stock-Inductor twin of a test, on a torch whose default is torch_npu's codegen (its own tests run there)
    "this torch has a torch_npu release": (
        r" has a stubbed torch_npu release \(",
        r": the default is torch_npu-wheel \(",
    ),
    # a reproducer of one torch_npu release's bug, or a behaviour that release does not have
    "not about this torch_npu release": (
        r"^the test is not about torch_npu \S+ \(set NPU_INDUCTOR_COMPAT_EVERY_RELEASE=1",
        r"^about torch_npu \S+; this torch pairs with ",
        r"^torch_npu \S+ (does not have the bug|has no |launches a flex backward|calls no |compiles no |keeps )",
        r"^torch_npu \S+'s tiling has no ",
    ),
    # what a test shows exists on some torch lines only
    "not on this torch line": (
        r" on torch 2\.\d+(\.x-2\.\d+\.x)? only$",
        r"^flex configs ask the device itself from torch 2\.9$",
        r"^this torch's flex decoding asks no CUDA property \(",
        r"'s sum lowering passes no strict_sum: nothing to show$",
        r"^v2_\w+ has no template heuristic registry$",
        r" has no column in the corpus table \(",
        r" itself crashes when two threads call torch\.compile at once$",
    ),
    # an optional package not installed (the models extra: a core line's slow session installs it and refuses this)
    "optional package missing": (
        r" not installed \(extra models\)$",
        r"^the real models need the models extra ",
        r"'s Python code imports .*, not installed here$",
        r"^could not import '(transformers|torchvision|yaml)'",
    ),
    # a documented command that is not run as written, and says why
    "documented, not runnable": (r"^not run: ",),
    # CANN's files: never on this machine unless pointed at
    "no CANN toolkit here": (r"^no CANN platform config here ",),
    # a wheel that could not be downloaded (no network?): listed, but CI (the CI variable set) accepts none
    "download failed": (
        r"^triton-ascend (unavailable|is not available|cannot be had): ",
        r"wheel cannot be (had|downloaded here): ",
        r"wheel not cached and not downloadable: ",
        r"^torch_npu headers unavailable: ",
    ),
}
REFUSED_IN_CI = ("download failed",)
COUNTS_ENV = "NPU_INDUCTOR_COMPAT_SKIP_COUNTS"
REFUSED_ENV = "NPU_INDUCTOR_COMPAT_REFUSE_SKIPS"  # listed reasons this run accepts none of, comma-separated


def refused_here() -> set[str]:
    """The reasons this run refuses: REFUSED_IN_CI under CI, and those $NPU_INDUCTOR_COMPAT_REFUSE_SKIPS names (a
    session that installed what they would skip for); a name not in REASONS is a usage error."""
    named = {name.strip() for name in os.environ.get(REFUSED_ENV, "").split(",") if name.strip()}
    unknown = sorted(named - set(REASONS))
    if unknown:
        raise pytest.UsageError(f"{REFUSED_ENV} names {unknown}; the listed reasons are {sorted(REASONS)}")
    return named | (set(REFUSED_IN_CI) if os.environ.get("CI") else set())


def reason_of(message: str) -> str | None:
    """The listed reason a skip message gives, or None."""
    for reason, patterns in REASONS.items():
        if any(re.search(pattern, message) for pattern in patterns):
            return reason
    return None


class Ledger:
    """One run's skips by reason (under xdist the controller sees every worker's reports)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.found: Counter[str] = Counter()
        self.unlisted: list[str] = []
        self.refused = refused_here()

    def _note(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail") or not isinstance(report.longrepr, tuple):
            return
        message = str(report.longrepr[2]).removeprefix("Skipped: ")
        reason = reason_of(message)
        self.found[reason or "unlisted"] += 1
        if reason is None or reason in self.refused:
            self.unlisted.append(f"{report.nodeid or report.longrepr[0]}: {message}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """An unlisted skip fails a run that would have passed; the controller records the counts."""
        if hasattr(self.config, "workerinput"):
            return
        if self.unlisted and exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = os.environ.get(COUNTS_ENV)
        if path:
            torch = sys.modules.get("torch")
            record = {
                "torch": str(getattr(torch, "__version__", "?")).split("+")[0],
                "tier": self.config.option.markexpr if selects_by_mark(self.config) else "not slow",
                "skips": dict(self.found),
            }
            with open(path, "a") as file:
                file.write(json.dumps(record) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        if self.found:
            counts = ", ".join(f"{reason} {count}" for reason, count in self.found.most_common())
            terminalreporter.write_line(f"skips by reason: {counts}")
        for line in self.unlisted:
            terminalreporter.write_line(
                f"skip not accepted (unlisted in tests/npu_compat_test_skips.py, or refused here): {line}"
            )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Ledger(config), "npu_compat_skip_ledger")
