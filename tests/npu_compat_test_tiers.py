"""Test tiers: a test that needs something slow says what, and one that is slow without saying so fails the run.

Loaded by conftest.py as the plugin ``npu_compat_test_tiers``; the marks, the limit and the once rule live here.
"""

from __future__ import annotations

from typing import Any

import pytest

# What a slow test needs. Any of these puts it in the slow tier (`slow` is added for it); plain `pytest` skips them.
TIER_MARKS = {
    "subprocess": "starts a fresh interpreter, which pays torch's import and the simulated NPU's setup (seconds)",
    "build": "compiles C++: the simulated NPU extension, the emulated ACL runtime, g++ checks against real headers",
    "download": "fetches wheels from PyPI (torch_npu, triton-ascend) on its first run, then reads the cache",
    "compile": "runs a real Inductor compile in this process that takes seconds",
}
OTHER_MARKS = {
    "slow": "added to every test with a tier mark; select the slow tier with -m slow, everything with -m ''",
    "once": "its result does not depend on the installed torch's Inductor: nox runs it on one core line only",
    "upstream_limit": "asserts an upstream component's rejection with its exact message: fails once a release lifts it",
    "corpus": "recomputes a table of library-model runs (minutes): `nox -s corpus` runs it, nox's slow session not",
}
DEFAULT_LIMIT_SECONDS = "5"
_SPENT = pytest.StashKey[float]()
_WAITED = pytest.StashKey[float]()
_DESELECTED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "tier_limit_seconds",
        "a test with no tier mark that takes longer than this (setup + call + teardown) fails the run",
        default=DEFAULT_LIMIT_SECONDS,
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, why in {**TIER_MARKS, **OTHER_MARKS}.items():
        config.addinivalue_line("markers", f"{name}: {why}")


def tier_of(item: pytest.Item) -> list[str]:
    return [name for name in TIER_MARKS if item.get_closest_marker(name) is not None]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every tier-marked test is `slow` too (before -m selects); with no -m, plain `pytest` is the fast tier, unless
    a test is named by its id on the command line."""
    for item in items:
        if tier_of(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    if selects_by_mark(config) or any("::" in arg for arg in config.args):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.hook.pytest_deselected(items=slow)
        config.stash[_DESELECTED] = len(slow)


def selects_by_mark(config: pytest.Config) -> bool:
    """-m given anywhere (command line, addopts, PYTEST_ADDOPTS), even as -m '' (everything)."""
    import os
    import shlex

    args = [
        *config.invocation_params.args,
        *config.getini("addopts"),
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
    ]
    return any(arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")) for arg in args)


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    count = config.stash.get(_DESELECTED, 0)
    if not count:
        return None
    return f"fast tier: {count} slow-tier tests not selected (-m slow runs them, -m '' runs everything)"


def _waited_for_a_cpu() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat: the load of everything else on
    the machine, not the test's own cost); 0.0 where the kernel does not say."""
    import threading

    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as file:
            return int(file.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _charge_load_elsewhere(item: pytest.Item) -> Any:
    before = _waited_for_a_cpu()
    try:
        return (yield)
    finally:
        item.stash[_WAITED] = item.stash.get(_WAITED, 0.0) + _waited_for_a_cpu() - before


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_charge_load_elsewhere)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_charge_load_elsewhere)
pytest_runtest_teardown = pytest.hookimpl(wrapper=True)(_charge_load_elsewhere)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    """A test's time is its phases' wall time less the time its thread waited for a CPU: load from other processes
    (the other xdist worker, another session) is not the test's slowness."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    spent = item.stash.get(_SPENT, 0.0) + report.duration
    item.stash[_SPENT] = spent
    if report.when != "teardown" or not report.passed or tier_of(item):
        return
    limit = float(item.config.getini("tier_limit_seconds"))
    waited = item.stash.get(_WAITED, 0.0)
    if spent - waited > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {spent - waited:.1f} s (setup + call + teardown, less {waited:.1f} s waiting for a "
            f"CPU) with no tier mark; the fast tier allows {limit:g} s. Mark it with what makes it slow "
            f"({', '.join(TIER_MARKS)}) or make it faster."
        )
