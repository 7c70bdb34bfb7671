"""torch-npu-long-rows-tiles (common/fixes/torch_npu_long_rows.py): its configs from torch_npu's own tile generator,
then the record on torch_npu's released codegen for greedy decoding's max over long rows, run in Triton's
interpreter."""

# torch_npu cannot run here, so the record is shown one level below the device: torch_npu's real released Inductor
# code (the torch_npu-wheel provider) generates the kernel on the exact torch its wheel requires, and its own
# heuristics build the kernel's configs (in the codegen process, as on an Ascend host, and in the check's worker);
# triton-ascend's front end lowers each config, and the kernel runs in Triton's interpreter with each, against torch.
# Without the record the same script is the reproducer in test_torch_npu_reports.py (a config that cannot compile).

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch_npu_codegen_harness as harness  # registered by conftest.py
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.fixes.torch_npu_long_rows import LONG_ROWS_TILES, fitting_tiles, kept_without_tiles

RECORD = LONG_ROWS_TILES.id
LONG_ROWS = ROOT / "examples" / "torch_npu_long_rows.py"
# The releases whose reduction configs keep one config without sub-block sizes for it (npu_triton_heuristics.py)
UNTILED_LONG_ROWS = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")
META = {"axis_names": ["x0", "r1"], "tiling_axis": [0, 1], "split_axis": [0], "low_dims": {1}, "dual_reduction": False}


def _config(**kwargs: Any) -> SimpleNamespace:
    return SimpleNamespace(kwargs=kwargs)


def test_the_kept_config_is_told_from_the_generators() -> None:
    assert kept_without_tiles([_config(X0BLOCK=4, split_axis=(0,), split_blocks=(4,))], META)
    assert not kept_without_tiles([_config(X0BLOCK=1, X0BLOCK_SUB=1, R1BLOCK_SUB=16384)], META)
    assert not kept_without_tiles([_config(X0BLOCK=4), _config(X0BLOCK=2)], META)  # more than the one kept
    assert not kept_without_tiles([_config(X0BLOCK=4)], {**META, "tiling_axis": []})  # nothing to tile


class Generator:
    """The interface fitting_tiles uses of torch_npu's TileGenerator (codegen/tile_generator.py in 2.9.1: the same
    constructor, blocks and sub_blocks lists, fill_config, calculate_config_numel, valid_tile_numel at 16384 * 4
    bytes, aligned_numel to 32 bytes, stop_numel 1024 bytes, add_to_configs), written here for float32."""

    def __init__(self, numels: list[int], axis_names: list[str], tiling_axis: list[int], split_axis: list[int],
                 low_dims: Any, persistent_reduction: bool, configs: list[Any], dtype: Any,
                 dual_reduction: bool = False) -> None:  # fmt: skip
        self.blocks, self.sub_blocks, self.configs = list(numels), list(numels), configs
        self.names, self.tiling, self.split, self.stop_numel = axis_names, tiling_axis, split_axis, 1024 // 4

    def aligned_numel(self, numel: int) -> int:
        return numel if numel <= 8 else (numel + 7) // 8 * 8

    def fill_config(self, config: dict[str, Any], blocks: list[int]) -> None:
        config.update({f"{self.names[axis].upper()}BLOCK": blocks[axis] for axis in self.split})
        config.update(
            {f"{self.names[x].upper()}BLOCK_SUB": self.aligned_numel(self.sub_blocks[x]) for x in self.tiling}
        )

    def calculate_config_numel(self, config: dict[str, Any]) -> int:
        total = 1
        for axis in self.tiling:
            total *= config[f"{self.names[axis].upper()}BLOCK_SUB"]
        return total

    def valid_tile_numel(self, numel: int) -> bool:
        return numel <= 16384 * 4 // 4

    def add_to_configs(self, blocks: list[int]) -> None:
        config: dict[str, Any] = {}
        self.fill_config(config, blocks)
        if self.valid_tile_numel(self.calculate_config_numel(config)) and config not in [
            c.kwargs for c in self.configs
        ]:
            self.configs.append(_config(**config))


def test_fitting_tiles_take_one_row_per_program_and_halve_the_row_until_it_fits() -> None:
    configs = fitting_tiles([4, 50257], META, persistent_reduction=False, generator=Generator)
    rows = [config.kwargs["R1BLOCK_SUB"] for config in configs]
    assert rows == [16384, 8192, 4096, 2048, 1024, 512, 256]  # the largest that fits, down to the stop size
    for config in configs:
        assert (config.kwargs["X0BLOCK"], config.kwargs["X0BLOCK_SUB"]) == (1, 1), config.kwargs
        assert (config.kwargs["split_axis"], config.kwargs["split_blocks"]) == ((0,), (1,)), config.kwargs
    # a persistent reduction keeps its row whole: a row that long fits no tile, and nothing is offered
    assert fitting_tiles([4, 50257], META, persistent_reduction=True, generator=Generator) == []
    # sizes that are symbols (dynamic shapes): nothing is offered either, the kept config stays
    assert fitting_tiles([4, object()], META, persistent_reduction=False, generator=Generator) == []


# The kernel in Triton's interpreter (after harness.INTERPRETER_PREAMBLE) with each config: the logits in, the max
# and its index out, compared exactly with torch's
INTERPRETED = r"""
torch.manual_seed(0)
logits = torch.randn(4, 50257)
values, indices = logits.max(-1)
results = []
for config in configs:
    got_values, got_indices = torch.zeros(4), torch.zeros(4, dtype=torch.int64)
    error = launched(config, [logits, got_values, got_indices])
    right = error is None and torch.equal(got_values, values) and torch.equal(got_indices, indices)
    results.append({"config": config, "error": error, "right": right})
print(json.dumps({"results": results}))
"""


@pytest.mark.subprocess
@pytest.mark.download
def test_the_record_gives_the_long_rows_max_configs_that_compile_and_are_right(tmp_path: Path) -> None:
    """The max and argmax of 4 rows of 50257 logits: with the record torch_npu's heuristics give configs with one row
    per program and the row's sub-block halved until it fits, triton-ascend's front end lowers every one, and in
    Triton's interpreter the kernel gives torch's max and argmax with each. Releases whose generator finds tiles
    themselves report the record "not needed" (2.7.1.post11's line) or have nothing to patch."""
    release = harness.paired_release(UNTILED_LONG_ROWS)
    run = harness.codegen(LONG_ROWS, (release,), tmp_path / "out", "--check-kernels", graphs=1)
    status = run.summary["fixes"][RECORD]
    if release not in UNTILED_LONG_ROWS:  # `nox -s torch_npu_wheel`
        assert status in ("not needed", "skipped"), status
        return
    assert status == "applied" and run.problems == [] and run.returncode == 0, run.stderr[-3000:]
    ((name, checked),) = run.summary["graphs"][0]["kernel_check"].items()
    assert checked and all(result["ok"] for result in checked), checked
    configs = [result["config"] for result in checked]
    assert all(config["X0BLOCK"] == 1 and config["R1BLOCK_SUB"] <= 16384 for config in configs), configs
    source = harness.kernel_sources(tmp_path / "out", run.summary, 0)[name]
    assert "'out_ptr0': '*fp32', 'out_ptr1': '*i64'" in source  # the max, then its index
    wrapper = (tmp_path / "out" / run.summary["graphs"][0]["files"]["wrapper"]).read_text()
    results = harness.interpret(INTERPRETED, source, wrapper, name, configs)
    assert [result["right"] for result in results["results"]] == [True] * len(configs), results
