"""The skip rule itself (tests/npu_compat_test_skips.py), on small test files through pytest's own pytester (in this
process)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from npu_compat_test_skips import REASONS, reason_of  # tests/npu_compat_test_skips.py, loaded by conftest.py

pytestmark = pytest.mark.once  # pytest plugin behaviour: nothing here depends on torch

LISTED = """
    import pytest

    def test_listed():
        pytest.skip("no torch_npu release to run on this torch: torch_npu 2.12.0.post3 requires torch 2.12.0")

    @pytest.mark.skipif(True, reason="not run: a placeholder for the reader's own script")
    def test_marked():
        pass

    def test_runs():
        pass
"""


@pytest.fixture
def sample(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("NPU_INDUCTOR_COMPAT_SKIP_COUNTS", raising=False)  # CI's file is the outer run's, not these
    monkeypatch.delenv("NPU_INDUCTOR_COMPAT_REFUSE_SKIPS", raising=False)  # as are the outer session's refusals
    pytester.makeini("[pytest]\naddopts = -p npu_compat_test_skips\n")
    return pytester


def test_listed_skips_pass_and_are_counted_per_reason(
    sample: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = tmp_path / "skips.jsonl"
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_SKIP_COUNTS", str(counts))
    sample.makepyfile(test_listed=LISTED)
    result = sample.runpytest()
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["skips by reason: *no torch_npu release for this torch 1*"])
    result.stdout.fnmatch_lines(["skips by reason: *documented, not runnable 1*"])
    (record,) = [json.loads(line) for line in counts.read_text().splitlines()]
    assert record["skips"] == {"no torch_npu release for this torch": 1, "documented, not runnable": 1}
    assert record["tier"] == "not slow"


def test_a_skip_with_an_unlisted_reason_fails_the_run_naming_it(sample: pytest.Pytester) -> None:
    sample.makepyfile(
        test_silent=textwrap.dedent(LISTED) + "\ndef test_quiet():\n    pytest.skip('the cache was cold')\n",
        test_module_level="import pytest\npytest.importorskip('no_such_package_here')\n",
    )
    result = sample.runpytest()
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["skip not accepted (unlisted in tests/npu_compat_test_skips.py*test_quiet: the cache was cold"]
    )
    result.stdout.fnmatch_lines(["skip not accepted*could not import 'no_such_package_here'*"])


def test_every_reason_has_a_pattern_and_a_message_fits_one_reason_only() -> None:
    assert all(REASONS.values())
    assert reason_of("transformers not installed (extra models)") == "optional package missing"
    assert reason_of("the cache was cold") is None


def test_a_failed_download_is_a_listed_skip_that_ci_refuses(
    sample: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample.makepyfile(
        test_net="import pytest\ndef test_x():\n    pytest.skip('triton-ascend unavailable: no network')\n"
    )
    monkeypatch.delenv("CI", raising=False)
    assert sample.runpytest().ret == 0
    monkeypatch.setenv("CI", "true")
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["skip not accepted*test_x: triton-ascend unavailable: no network"])


def test_a_session_that_installed_the_optional_packages_refuses_their_skip(
    sample: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """noxfile.py's slow session installs the models extra on a core line and names the reason: a model test that
    skipped there for want of transformers would leave CI's real-model claim unproven, so it fails the run."""
    sample.makepyfile(
        test_models="import pytest\ndef test_x():\n    pytest.skip('transformers not installed (extra models)')\n"
    )
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_REFUSE_SKIPS", "no CANN toolkit here")
    assert sample.runpytest().ret == 0
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_REFUSE_SKIPS", "no CANN toolkit here, optional package missing")
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["skip not accepted*test_x: transformers not installed (extra models)"])
    monkeypatch.setenv("NPU_INDUCTOR_COMPAT_REFUSE_SKIPS", "optional packages missing")
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "NPU_INDUCTOR_COMPAT_REFUSE_SKIPS names ['optional packages missing']" in result.stderr.str()
