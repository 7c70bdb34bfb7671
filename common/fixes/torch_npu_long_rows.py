"""Fix record for torch_npu's configs of a reduction over a few long rows: its tile generator finds no tile, and the
config kept instead lacks the kernel's sub-block sizes, so it cannot compile (docs/torch-npu-reports.md)."""

# Importing this module imports no torch or torch_npu module; the wrapper runs when a kernel's configs are built,
# which on an Ascend host is in the compiling process (these releases set Inductor's compile_threads to 1).

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

REDUCTION_CONFIGS = torch_npu_names.qualname("index-kernel-configs")
# The probe's case: each row's max over GPT-2's vocabulary for 4 rows (examples/torch_npu_long_rows.py)
LONG_ROWS_SIZES = (4, 50257)
LONG_ROWS: dict[str, Any] = {"axis_names": ["x0", "r1"], "tiling_axis": [0, 1], "split_axis": [0], "low_dims": {1}}


# npu_triton_heuristics.py triton_config_npu_index (2.8.0.post5, 2.9.1, 2.11.0.post3, 2.12.0.post3) asks its
# TileGenerator (codegen/tile_generator.py) for configs. With at most half the vector cores' worth of rows, each
# longer than one tile holds (the max of 4 rows of 50257 logits), descend_split_tiling records no candidate block,
# and descend_all_low_dims, which shrinks the row's sub-block, adds only candidates: no config. The function then
# keeps ``{X0BLOCK: rows}`` alone, while the kernel takes X0BLOCK_SUB and R1BLOCK_SUB: triton-ascend cannot build it.
def kept_without_tiles(configs: list[Any], meta: dict[str, Any]) -> bool:
    """Whether ``configs`` is the one config kept when the generator found none: split-axis blocks only, for a
    kernel that has tiling axes."""
    if len(configs) != 1 or not meta.get("tiling_axis"):
        return False
    names = {f"{meta['axis_names'][axis].upper()}BLOCK" for axis in meta["split_axis"]}
    return set(configs[0].kwargs) - {"split_axis", "split_blocks"} <= names | {"dummy"}


def fitting_tiles(
    size_hints: list[Any], meta: dict[str, Any], persistent_reduction: bool, generator: type | None = None
) -> list[Any]:
    """Configs from the release's TileGenerator: one row (block 1) per program on each split axis, each other tiling
    axis's sub-block halved, largest first, until the tile fits the generator's limit; that config and each halving
    after it down to the generator's stop size. Empty when nothing fits (an axis it may not shrink is too long) or a
    size is not a number (a symbol: the kept config stays as torch_npu made it).

    The generator of 2.7.1.post11's line (FastATileGenerator.descend_tiling_axis) adds the config at each step as it
    halves the tiling axis's sub-block, from one row per program: X0BLOCK=1, X0BLOCK_SUB=1, R1BLOCK_SUB 16384 and
    down. The record does that with the release's own generator (its alignment, tile limit and de-duplication).
    """
    from torch._inductor.runtime.runtime_utils import next_power_of_2

    try:
        sizes = [int(size) for size in size_hints]
    except (TypeError, ValueError):
        return []

    tile_generator = generator or torch_npu_names.first_defined("tile-generator")
    configs: list[Any] = []
    split, tiling = list(meta["split_axis"]), list(meta["tiling_axis"])
    tiles = tile_generator(
        sizes,
        meta["axis_names"],
        tiling,
        split,
        meta["low_dims"],
        persistent_reduction=persistent_reduction,
        configs=configs,
        dtype=meta.get("split_axis_dtype"),
        dual_reduction=meta.get("dual_reduction", False),
    )
    for axis in split:
        tiles.blocks[axis] = tiles.sub_blocks[axis] = 1
    # a persistent reduction keeps its reduction axes whole (as the generator does)
    shrinkable = [
        axis
        for axis in tiling
        if axis not in split and not (persistent_reduction and meta["axis_names"][axis].startswith("r"))
    ]
    for axis in shrinkable:
        tiles.sub_blocks[axis] = next_power_of_2(sizes[axis])

    def tile_numel() -> int:
        config: dict[str, Any] = {}
        tiles.fill_config(config, tiles.blocks)
        return int(tiles.calculate_config_numel(config))

    while shrinkable:
        if tiles.valid_tile_numel(tile_numel()):
            tiles.add_to_configs(tiles.blocks)
            if tile_numel() <= tiles.stop_numel:
                break
        axis = max(shrinkable, key=lambda each: tiles.sub_blocks[each])
        if tiles.sub_blocks[axis] == 1:
            break
        tiles.sub_blocks[axis] = tiles.sub_blocks[axis] // 2
    for config in configs:  # as triton_config_npu_index finishes each config
        config.kwargs["split_axis"] = tuple(split)
        config.kwargs["split_blocks"] = tuple(config.kwargs[f"{meta['axis_names'][x].upper()}BLOCK"] for x in split)
    return configs


def _with_fitting_tiles(original: Callable[..., Any]) -> Callable[..., Any]:
    @wraps_original(original)
    def triton_config_npu_index(size_hints: Any, inductor_meta: Any, *args: Any, **kwargs: Any) -> Any:
        configs = original(size_hints, inductor_meta, *args, **kwargs)
        if not kept_without_tiles(configs, inductor_meta):
            return configs
        fitted = fitting_tiles(size_hints, inductor_meta, bool(kwargs.get("persistent_reduction", False)))
        return fitted or configs

    return triton_config_npu_index


def configs_have_tiles() -> bool:
    """The probe: the installed triton_config_npu_index, called for 4 rows of 50257 float32 elements, gives configs
    with the kernel's sub-block sizes (the releases where the bug does not arise)."""
    import torch

    configs_for = torch_npu_names.first_defined("index-kernel-configs")
    meta = {**LONG_ROWS, "split_axis_dtype": torch.float32, "dual_reduction": False}
    configs = configs_for(list(LONG_ROWS_SIZES), meta, reduction=True)
    return not kept_without_tiles(configs, meta)


LONG_ROWS_TILES = Patch(
    id="torch-npu-long-rows-tiles",
    proven_by=(
        "tests/common/fixes/test_torch_npu_long_rows.py::test_the_record_gives_the_long_rows_max_configs_that_compile_and_are_right",
    ),
    layer="fix",
    why=(
        "torch_npu's reduction configs for a few rows longer than a tile (the max over 4 rows of GPT-2's 50257 "
        "logits) keep one config without the kernel's sub-block sizes when the tile generator finds none, so the "
        "kernel cannot compile; the record gives it fitting tiles from the same generator, one row per program"
    ),
    upstream=(
        "2.7.1.post11's line (FastATileGenerator) halves the tiling axis's sub-block until a tile fits; 2.8.0.post5, "
        "2.9.1, 2.11.0.post3 and 2.12.0.post3 (npu_triton_heuristics.py's TileGenerator) lack it"
    ),
    remove_when="no torch_npu release in use keeps a config without sub-block sizes for a kernel with tiling axes",
    changes=(Change(REDUCTION_CONFIGS, _with_fitting_tiles, optional=True),),
    upstream_has_fix=configs_have_tiles,
    patches_package="torch_npu",
)

FIXES: tuple[Patch, ...] = (LONG_ROWS_TILES,)

__all__ = ["FIXES", "LONG_ROWS_TILES", "fitting_tiles", "kept_without_tiles"]
