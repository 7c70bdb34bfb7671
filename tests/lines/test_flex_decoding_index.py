"""The v2_7_1 flex decoding fix (flex-decoding-block-index-wrap), proven by executing what Inductor generates for
examples/flex_attention.py on the simulated NPU: the decoding kernel in Triton's interpreter, every load checked
against the tensors its launch was given (no NPU here: the interpreter is the level below it)."""

# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [file]: the v2_7_1 line's own flex decoding fix

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_paths import ROOT

import npu_inductor_compat
from npu_inductor_compat.v2_7_1 import flex_decoding_index

FLEX_EXAMPLE = ROOT / "examples" / "flex_attention.py"
RECORD = flex_decoding_index.DECODING_INDEX_WRAP.id


def _executed(tmp_path: Path, provider: str | None, *extra: str) -> tuple[Any, dict[str, Any]]:
    """codegen --execute of the example with dynamic shapes, each kernel's first two configs."""
    done = run_codegen(
        FLEX_EXAMPLE, "--dynamic", "--execute", "--max-configs", "2", *extra, out=tmp_path / "out", provider=provider
    )
    assert done.summary is not None, done.stderr[-3000:]
    return done, done.summary


@pytest.mark.subprocess
def test_without_the_record_the_decoding_kernel_reads_past_its_block_indices(tmp_path: Path) -> None:
    """The example's short query is lowered to flex decoding with 20 key/value splits (the NPU's cores) over one
    block: without the record the decoding template reads a split's first block index past the end of
    FULL_KV_IDX, an error naming the template. With it every graph matches eager: the same run by default in
    tests/tools/wheel/test_torch_npu_flex.py (codegen's default provider: torch_npu 2.7.1.post11's codegen on
    2.7.1, which calls torch's decoding template; stock Inductor's reads the same, docs/codegen.md)."""
    if npu_inductor_compat.torch_line() != "v2_7_1":
        pytest.skip("the decoding template reads the index unwrapped on torch 2.7.x-2.8.x only")
    done, summary = _executed(tmp_path, None, "--without-fix", RECORD)
    verdicts = [graph["execution"]["status"] for graph in summary["graphs"]]
    assert done.returncode == 1 and verdicts == ["error", "match"], verdicts
    wrong = summary["graphs"][0]["execution"]["first_wrong"]
    assert wrong["kernel"].startswith("triton_tem_"), wrong
    assert "outside every tensor" in wrong["detail"]["message"] and "KV_IDX" in wrong["detail"]["message"], wrong


def test_the_probe_reads_the_installed_torchs_template() -> None:
    """The probe's reading on its own: torch 2.7/2.8's template reads the index unwrapped, twice (the record's
    rewrite count); torch 2.9 on wrap it in their jinja template."""
    if npu_inductor_compat.torch_line() != "v2_7_1":
        assert flex_decoding_index.wraps_the_index()
        return
    source = flex_decoding_index.template_source()
    assert source.count(flex_decoding_index.UNWRAPPED) == 2 and not flex_decoding_index.wraps_the_index()
