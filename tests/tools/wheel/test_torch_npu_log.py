"""torch_npu's repeated log lines under the torch_npu-wheel provider: each place shown once, repeats counted
(tools/simulated/wheel/wheel_events.py counting_repeated_log_lines); errors and other loggers untouched."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py

from npu_inductor_compat.patching import Change, Journal, Patch
from npu_inductor_compat.tools.simulated.wheel.wheel_events import Events, counting_repeated_log_lines
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable, paired_release, unpacked

RECORD = "torch-npu-wheel-repeated-log-lines"
WARNING = "low_dims is null"  # torch_npu's tiling warning, once per kernel whose indexing has no low dims
# three static graphs of a transposing copy: each kernel's tiling warns once (where the release has the warning)
SCRIPT = """
import torch


def copy_transposed(x):
    return x.transpose(1, 2).contiguous() * 2


for length in (16, 32, 64):
    torch.compile(copy_transposed, dynamic=False)(torch.randn(2, 3, length).to("npu"))
"""


def test_a_place_logs_once_its_repeats_are_counted_and_errors_and_others_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = Events()
    record = Patch(
        "count-log", "w", "u", "r", (Change("logging:Logger.callHandlers", counting_repeated_log_lines(events)),)
    )
    tiling, other = logging.getLogger("torch_npu._inductor.config"), logging.getLogger("someone.else")
    journal = Journal()
    journal.apply([record])
    try:
        with caplog.at_level(logging.INFO):
            for index in range(3):
                tiling.warning("kernel %d: low_dims is null", index)
                tiling.error("kernel %d failed", index)
                other.warning("theirs %d", index)
    finally:
        journal.undo()
    shown = [entry.getMessage() for entry in caplog.records]
    assert shown.count("kernel 0: low_dims is null") == 1 and not any("kernel 1: low" in text for text in shown)
    assert [text for text in shown if "failed" in text] == [f"kernel {index} failed" for index in range(3)]
    assert [text for text in shown if text.startswith("theirs")] == ["theirs 0", "theirs 1", "theirs 2"]
    (place,) = events.summary()["log"]
    assert place["count"] == 3 and place["level"] == "WARNING" and place["first"] == "kernel 0: low_dims is null"


@pytest.mark.subprocess
@pytest.mark.download
def test_torch_npus_tiling_warning_is_shown_once_with_the_record_and_every_time_without(tmp_path: Path) -> None:
    """torch_npu's own codegen on the exact torch its wheel requires: its tiling warns once per kernel; with the
    record one line and a count, without it a line per kernel."""
    import torch

    try:
        release = paired_release(torch.__version__)
        tree = unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    tiling = next(tree.package.rglob("split_tiling.py"), None)
    if tiling is None or WARNING not in tiling.read_text():
        pytest.skip(f"torch_npu {release}'s tiling has no {WARNING!r} warning")
    script = tmp_path / "transposed.py"
    script.write_text(SCRIPT)

    def run(name: str, *flags: str) -> tuple[int, dict[str, Any]]:
        # not --quiet: the lines are what the user sees
        done = run_codegen(script, *flags, out=tmp_path / name, provider="torch_npu-wheel", cwd=tmp_path)
        assert done.summary is not None, done.stderr[-3000:]
        return done.stderr.count(WARNING), done.summary

    shown, summary = run("with")
    (place,) = [place for place in summary["torch_npu_wheel"]["log"] if WARNING in place["first"]]
    assert place["count"] == 3 and place["where"].endswith(f"split_tiling.py:{place['where'].rsplit(':', 1)[1]}")
    shown_without, plain = run("without", "--without-fix", RECORD)
    assert plain["without_fix"] == [RECORD] and shown_without == 3
    assert shown < shown_without, (shown, shown_without)
