"""The kernel-corpus table in docs/codegen.md is true for the torch line under test."""

# Reruns the corpus (examples/corpus: real model scripts) through `codegen --check-kernels` on this line: the simulated
# NPU generates the kernels, triton-ascend's real compiler front end lowers every autotune config to linalg (no NPU or
# CANN here: npubin is the one stage not run). The cells for this torch version must say what the run found.

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parent.parent


def _corpus_module() -> Any:
    from npu_inductor_compat.tools.simulated import corpus

    return corpus


def test_the_corpus_table_is_true_for_this_torch_line() -> None:
    import torch

    corpus = _corpus_module()
    version = torch.__version__.split("+")[0]
    table = corpus.table_in_readme(ROOT / "docs" / "codegen.md")
    if version not in table:
        pytest.skip(f"torch {version} has no column in the corpus table (nox -s kernels runs the core lines)")
    results = corpus.run(ROOT / "examples" / "corpus")
    if any(entry.get("triton_ascend") is None for entry in results["scripts"]):
        pytest.skip(f"triton-ascend unavailable: {results['scripts'][0].get('error')}")
    assert corpus.row(results) == table[version], "run `nox -s kernels` and `nox -s kernels_table`"
    assert len(results["scripts"]) == 5
    # real Ascend scripts, unchanged: each imports torch_npu (the stand-in answers it) and the run exits 0
    assert [(entry["script"], entry["exit"], entry["imported_torch_npu"]) for entry in results["scripts"]] == [
        (entry["script"], 0, True) for entry in results["scripts"]
    ]


def test_the_table_renders_rejections_with_the_compilers_line() -> None:
    corpus = _corpus_module()
    results = {
        "torch": "2.12.1",
        "scripts": [
            {
                "script": "a.py",
                "triton_ascend": "3.2.0",
                "graphs": 1,
                "kernels": 2,
                "configs": 4,
                "error": None,
                "rejected": [
                    {
                        "kernel": "k",
                        "config": {"XBLOCK": 1},
                        "stage": "ttir-passes",
                        "message": "Assertion `isa<To>(Val)' failed.",
                    }
                ],
            },
        ],
    }
    text = corpus.render([results])
    assert "| `a.py` | 2 kernels, 3/4 configs |" in text
    assert "- torch 2.12.1, `a.py`: `k` (XBLOCK=1) at ttir-passes: `Assertion `isa<To>(Val)' failed.`" in text
    assert corpus._first_line("triton-adapter-opt signal SIGABRT:\nx.h:5: f: Assertion `x' failed.") == (
        "x.h:5: f: Assertion `x' failed."
    )
