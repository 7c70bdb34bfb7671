"""The tier rules themselves, run on small test files through pytest's own pytester (in this process)."""

from __future__ import annotations

import ast
import re

import pytest
from npu_compat_test_paths import ROOT
from npu_compat_test_tiers import TIER_MARKS  # tests/npu_compat_test_tiers.py, loaded by conftest.py

pytestmark = pytest.mark.once  # pytest plugin behaviour: nothing here depends on torch

FILES = {
    "test_sample": """
        import time, pytest

        def test_fast():
            pass

        def test_slow_without_a_mark():
            time.sleep(0.3)

        @pytest.mark.subprocess
        def test_slow_with_a_mark():
            time.sleep(0.3)

        @pytest.fixture(scope="module")
        def costly():
            time.sleep(0.3)

        def test_slow_through_a_shared_fixture(costly):
            pass
    """
}


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntier_limit_seconds = 0.2\naddopts = -p npu_compat_test_tiers --strict-markers\n")
    pytester.makepyfile(**FILES)
    return pytester


def test_a_test_slower_than_the_limit_without_a_tier_mark_fails_the_run(sample: pytest.Pytester) -> None:
    result = sample.runpytest("-m", "")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(
        ["*test_slow_without_a_mark took 0.* s (setup + call + teardown, less 0.* s waiting for a CPU) with no tier*"]
    )
    result.stdout.fnmatch_lines(["*test_slow_through_a_shared_fixture took*"])
    assert "test_slow_with_a_mark took" not in result.stdout.str()


def test_plain_pytest_is_the_fast_tier_and_says_what_it_left_out(sample: pytest.Pytester) -> None:
    result = sample.runpytest()
    result.assert_outcomes(passed=3, errors=2, deselected=1)
    result.stdout.fnmatch_lines(
        ["fast tier: 1 slow-tier tests not selected (-m slow runs them, -m '' runs everything)"]
    )


def test_a_tier_mark_makes_a_test_slow_and_naming_a_test_runs_it(sample: pytest.Pytester) -> None:
    sample.runpytest("-m", "slow").assert_outcomes(passed=1, deselected=3)
    sample.runpytest("test_sample.py::test_slow_with_a_mark").assert_outcomes(passed=1)


BUSY = """
    import time

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def test_half_the_limit_of_work():
        spin(0.4)

    def test_twice_the_limit_of_work():
        spin(1.6)
"""


@pytest.mark.subprocess  # a busy child process shares this process's one CPU
def test_waiting_for_a_cpu_under_load_is_not_charged_to_the_test(pytester: pytest.Pytester) -> None:
    """With a busy process on the same single CPU, a test doing 0.4 s of work takes about 0.8 s of wall time: it
    passes a 0.7 s limit, charged its own work only; 1.6 s of work fails it whatever the load."""
    import os
    import subprocess
    import sys

    pytester.makeini("[pytest]\ntier_limit_seconds = 0.7\naddopts = -p npu_compat_test_tiers\n")
    pytester.makepyfile(test_busy=BUSY)
    cpus = os.sched_getaffinity(0)
    cpu = min(cpus)
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        os.sched_setaffinity(0, {cpu})
        result = pytester.runpytest("-p", "no:cacheprovider")
    finally:
        os.sched_setaffinity(0, cpus)
        busy.kill()
        busy.wait()
    result.assert_outcomes(passed=2, errors=1)
    output = result.stdout.str()
    assert "test_half_the_limit_of_work took" not in output, output
    waited = re.search(
        r"test_twice_the_limit_of_work took ([\d.]+) s \(setup \+ call \+ teardown, less ([\d.]+) s", output
    )
    assert waited and float(waited.group(2)) > 0.4, output  # the load was seen, and left out


def test_an_unknown_mark_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = -p npu_compat_test_tiers --strict-markers\n")
    pytester.makepyfile(test_typo="import pytest\n@pytest.mark.subprocesss\ndef test_x():\n    pass\n")
    pytester.runpytest().assert_outcomes(errors=1)


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The names of ``@pytest.mark.NAME`` (called or not) among ``decorators``."""
    found = set()
    for decorator in decorators:
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
            found.add(node.attr)
    return found


def test_a_test_that_starts_an_interpreter_has_a_tier_mark() -> None:
    """A fresh interpreter is seconds once it imports torch: the fast tier must not start one (the time limit only
    catches the tests that happen to be slow on this machine)."""
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        module = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(target, "id", "") == "pytestmark" for target in node.targets
            ):
                module |= {part.attr for part in ast.walk(node.value) if isinstance(part, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                starts = any(
                    isinstance(part, ast.Attribute)
                    and part.attr == "executable"
                    and getattr(part.value, "id", "") == "sys"
                    for part in ast.walk(node)
                )
                if starts and not (_marks(node.decorator_list) | module) & set(TIER_MARKS):
                    unmarked.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert unmarked == [], "start a fresh interpreter without a tier mark (mark them subprocess)"
