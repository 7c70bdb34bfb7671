"""The real-model corpus table (tools/simulated/kernels/model_corpus.py): rejection classes and the markdown rows."""

from __future__ import annotations

import pytest

from npu_inductor_compat.tools.simulated.kernels.model_corpus import fallback_class, rejection_class, run_entry, table

pytestmark = pytest.mark.once  # text handling only

# a fallback's error as torch_npu's TTIR check reports it (ResNet-18's batch-norm backward, 2.7.1.post11)
BROADCAST = (
    "TtirCheckFailed: torch_npu's TTIR check failed: NoTritonConfigsError: Failed to compile config Z0BLOCK: 2, "
    "for make ttir triton_: at 12:12:\n            tl.store(out_ptr0 + (x0 + tl.arange(0,1) ), tmp3, x0_mask)\n"
    "            ^\nValueError('Cannot broadcast, rank mismatch: [1], [1, 1, 1]')"
)


def test_a_rejection_class_drops_locations_names_and_numbers() -> None:
    one = rejection_class("/build/x/graph_3/kernels/k.py:12:5: error: 'tt.reduce' op expects 4 operands, got 2")
    two = rejection_class("/other/place/k2.py:80:1: error: 'tt.scan' op expects 1 operands, got 3")
    assert one == two == "error: '…' op expects N operands, got N"
    assert rejection_class("") == "(no message)"
    long = rejection_class("error: " + "operand " * 40)  # cut at a space, never inside a word
    assert long.endswith("operand ...") and len(long) <= 84
    assertion = (
        "triton-adapter-opt: /opt/llvm/include/llvm/Support/Casting.h:578: decltype(auto) llvm::cast(From *) "
        "[To = mlir::scf::ForOp, From = mlir::Operation]: Assertion `isa<To>(Val)` failed."
    )
    assert rejection_class(assertion).startswith("triton-adapter-opt: llvm::cast(From *) [To = mlir::scf::ForOp,")
    converter = "tao: /w/TritonOpConverter.cpp:501: virtual LogicalResult TTOpConverters::Reduce::matchAndRewrite("
    assert rejection_class(converter) == "tao: TTOpConverters::Reduce::matchAndRewrite("


def test_the_table_has_a_row_per_model_with_rejections_by_class() -> None:
    entries = [
        {
            "model": "gpt2",
            "provider": "torch_npu-wheel",
            "exit": 1,
            "graphs": 5,
            "kernels": 61,
            "accepted": 59,
            "rejected": {"error: A": 2},
            "torch_npu_fallbacks": [fallback_class(BROADCAST)] * 2,
            "triton_ascend": "3.2.0",
            "error": None,
        },
        {
            "model": "vit",
            "provider": None,
            "exit": None,
            "graphs": 0,
            "kernels": 0,
            "accepted": 0,
            "rejected": {},
            "error": "codegen exited 2: usage\nmore",
        },
        {
            "model": "llama",
            "provider": "stock",
            "exit": 1,
            "graphs": 0,
            "kernels": 0,
            "accepted": 0,
            "rejected": {},
            "error": "NotImplementedError: Could not run 'npu::npu_fusion_attention' with arguments from the "
            "'Autogradnpu' backend",
        },
    ]
    lines = table(entries, "2.12.1").splitlines()
    assert lines[0].startswith("torch 2.12.1, triton-ascend 3.2.0")
    assert lines[2] == "| model | provider | exit | graphs | kernels | accepted | rejected (by class) |"
    # torch_npu's own fallbacks (its TTIR check failed) are said apart from triton-ascend's rejections
    assert (
        lines[4] == "| gpt2 | torch_npu-wheel | 1 | 5 | 61 | 59 | 2 `error: A`; torch_npu fell back: "
        "2 `ValueError('Cannot broadcast, rank mismatch: [N], [N, N, N]')` |"
    )
    assert lines[5] == "| vit | - | - | 0 | 0 | 0 | 0 (error: codegen exited 2: usage) |"
    # an error line is cut at the last space within 70 characters, never inside a word
    assert lines[6].endswith("(error: NotImplementedError: Could not run 'npu::npu_fusion_attention' with ...) |")


def test_with_execute_the_table_says_which_graphs_matched_in_the_readmes_words() -> None:
    """A run with --execute (summary.json's ``execution``) adds a column in the README's words: `run M/N` for the
    Python wrapper, `C++ M/N` for the C++ one, and what did not match; a run without it has no such column."""
    verdicts = {"match": 3, "mismatch": 1, "error": 0, "not run": 1}
    execution = {"graphs": verdicts, "launches": 9, "configs": 12, "seconds": 4.5}
    base = {"provider": "stock", "exit": 1, "graphs": 5, "kernels": 9, "accepted": 9, "rejected": {}, "error": None}
    entries = [
        {**base, "model": "bert", "run": run_entry(execution, cpp_wrapper=False)},
        {**base, "model": "t5", "run": run_entry({**execution, "graphs": {**verdicts, "mismatch": 0}}, True)},
        {**base, "model": "vit"},  # codegen failed before executing anything
    ]
    lines = table(entries, "2.12.1").splitlines()
    assert lines[2].endswith("| rejected (by class) | executed (`--execute`) |") and lines[3].count("---") == 8
    assert lines[4].endswith("| 0 | run 3/5 (1 mismatch, 1 not run) |")
    assert lines[5].endswith("| 0 | C++ 3/4 (1 not run) |")
    assert lines[6].endswith("| 0 | - |")
    assert "executed" not in table([{**base, "model": "bert"}], "2.12.1")
