"""codegen's one-line messages: error lines cut between words, and why a run that compiled nothing failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated.codegen.codegen_report import failed_where as _failed_where
from npu_inductor_compat.tools.simulated.codegen.codegen_report import first_line

pytestmark = pytest.mark.once


def test_a_long_error_line_is_cut_between_words_and_marked() -> None:
    message = "CantSplit.__init__() missing 2 required positional arguments: 'expr' and 'remaining'\nsecond line"
    cut = first_line(message, width=60)
    assert cut == "CantSplit.__init__() missing 2 required positional ..."
    assert len(cut) <= 64 and message.startswith(cut.removesuffix(" ..."))


def test_a_short_line_and_no_message_are_kept_as_they_are() -> None:
    assert first_line("  short\nmore") == "short"
    assert first_line("   \n") == "(no message)"


def test_one_word_longer_than_the_width_is_cut_at_the_width() -> None:
    assert first_line("x" * 300, width=10) == "x" * 10 + " ..."


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("ModuleNotFoundError", "at import: No module named 'x'"),
        ("ImportError", "at import: No module named 'x'"),
        ("ValueError", "ValueError: No module named 'x'"),
    ],
)
def test_a_failure_before_any_graph_says_where(kind: str, expected: str) -> None:
    assert _failed_where({"type": kind, "message": "No module named 'x'"}) == expected


def test_inductors_cuda_sm_note_is_dropped_for_the_run_and_nothing_else(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from npu_inductor_compat.tools.simulated.codegen.codegen_env import cuda_notes_dropped as _cuda_notes_dropped

    logger = logging.getLogger("torch._inductor.utils")
    with caplog.at_level(logging.WARNING, logger="torch._inductor.utils"):
        with _cuda_notes_dropped():
            logger.warning("Not enough SMs to use max_autotune_gemm mode", extra={"min_sms": 68, "avail_sms": 24})
            logger.warning("something else Inductor says")
        logger.warning("Not enough SMs to use max_autotune_gemm mode")  # outside the run: untouched
    assert [record.getMessage() for record in caplog.records] == [
        "something else Inductor says",
        "Not enough SMs to use max_autotune_gemm mode",
    ]


def test_torch_271s_printed_cuda_note_is_held_back_and_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    """torch 2.7.1's cpp_extension prints the note (2.9 on log it): the print is held back only inside the run."""
    import sys

    from npu_inductor_compat.tools.simulated.codegen.codegen_env import cpp_extension_quiet

    with cpp_extension_quiet():
        print("No CUDA runtime is found, using CUDA_HOME='/usr/local'", file=sys.stderr)
        print("building the extension", file=sys.stderr)
    print("No CUDA runtime is found, outside", file=sys.stderr)
    assert capsys.readouterr().err == "building the extension\nNo CUDA runtime is found, outside\n"


@pytest.mark.subprocess
def test_no_numpy_warning_from_the_commands_though_torch_gives_one(tmp_path: Path) -> None:
    """numpy made unimportable (a package that raises): torch itself warns at import, the report does not."""
    import os
    import subprocess
    import sys

    blocked = tmp_path / "no_numpy" / "numpy"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    env = {**os.environ, "PYTHONPATH": str(blocked.parent), "NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"}

    def stderr(*command: str) -> str:
        done = subprocess.run([sys.executable, *command], capture_output=True, text=True, env=env, timeout=300)
        return done.stderr

    assert "Failed to initialize NumPy" in stderr("-c", "import torch")
    assert "Failed to initialize NumPy" not in stderr("-m", "npu_inductor_compat", "fixes")


def test_kernels_that_cannot_compile_at_all_are_told_apart_from_those_that_lose_configs() -> None:
    from npu_inductor_compat.tools.simulated.kernels.kernel_check import rejected_kernels, verdict

    ok, bad = {"ok": True}, {"ok": False}
    graphs = [
        {"index": 0, "kernel_check": {"triton_per_fused_0": [bad, bad], "triton_poi_fused_1": [ok, bad]}},
        {"index": 1, "kernel_check": {"triton_poi_fused_2": [ok, ok]}},
        {"index": 2},  # a graph with no Triton kernel
    ]
    every, some = rejected_kernels(graphs)
    assert (every, some) == (["graph 0: triton_per_fused_0"], ["graph 0: triton_poi_fused_1"])
    check = {"rejected": 3, "every_config_rejected": every, "some_configs_rejected": some}
    assert verdict(check) == (
        "3 config(s) rejected; 1 kernel(s) with every config rejected, which cannot compile at all "
        "(graph 0: triton_per_fused_0); 1 kernel(s) with some configs rejected"
    )
    assert verdict({"rejected": 0, "configs": 4}) == "every kernel config lowered"
    assert verdict({"rejected": 0, "configs": 0}) == "no Triton kernel to lower"  # e.g. the script failed at import


def test_a_first_line_that_introduces_the_error_is_joined_with_it() -> None:
    """Dynamo's BackendCompilerFailed puts the real error on its second line (torch_npu 2.9.1 on a dynamic BERT)."""
    message = (
        "backend='inductor' raised:\nTypeError: cannot determine truth value of Relational: s27*s52 > 1\n\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"
    )
    assert first_line(message) == (
        "backend='inductor' raised: TypeError: cannot determine truth value of Relational: s27*s52 > 1"
    )
