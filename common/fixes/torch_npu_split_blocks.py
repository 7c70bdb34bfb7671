"""Record torch-npu-split-blocks-past-cores: torch_npu's tile generator divides by zero when a kernel's earlier split
axes already take more programs than there are vector cores (docs/torch-npu-reports.md)."""

# Importing this imports no torch.

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.patching import Change, Patch, wraps_original

LAST_SPLIT_BLOCKS = torch_npu_names.qualname("tile-generator-last-split-blocks")


def _programs_before(generator: Any, axis: int) -> int:
    """The programs the split axes before ``axis`` take, counted as torch_npu counts them."""
    programs = 1
    for other in generator.split_axis:
        if other == axis:
            break
        programs *= (generator.numels[other] + generator.blocks[other] - 1) // generator.blocks[other]
    return programs


def _vector_cores(generator: Any) -> int:
    """``config.num_vector_core`` as the generator's own module reads it (torch_npu._inductor.config)."""
    return int(importlib.import_module(type(generator).__module__).config.num_vector_core)


def _whole_axis_past_the_cores(original: Callable[..., Any]) -> Callable[..., Any]:
    """TileGenerator.calcu_last_split_blocks, giving an axis past the vector cores its whole length in one block.

    codegen/tile_generator.py TileGenerator.calcu_last_split_blocks (every release from 2.7.1.post11 to
    2.12.0.post3; 2.13.0 and 2.14.0 have no TileGenerator) gives the split axis ``axis`` what is left of the vector
    cores after the split axes before it: ``last_splits = config.num_vector_core // splits``, then
    ``numel // last_splits``. Past the cores ``last_splits`` is 0 and the config search raises ZeroDivisionError while
    the kernel module loads: flex decoding's reduction over its split key/value blocks (five axes, 296 programs on the
    first) never compiles. With no core left, the axis is not split further: its whole length in one block, what
    ``last_splits = 1`` gives.
    """

    @wraps_original(original)
    def calcu_last_split_blocks(self: Any, axis: Any, *args: Any, **kwargs: Any) -> Any:
        if _programs_before(self, axis) > _vector_cores(self):
            return self.numels[axis]
        return original(self, axis, *args, **kwargs)

    return calcu_last_split_blocks


def _never_divides_by_zero() -> bool:
    """The installed method on a stand-in generator whose first split axis takes one program more than the cores
    (attributes the method reads: split_axis, numels, blocks; the generator's module's config)."""
    from types import SimpleNamespace

    method = torch_npu_names.as_written("tile-generator-last-split-blocks")
    generator_class = torch_npu_names.first_defined("tile-generator")
    cores = int(importlib.import_module(generator_class.__module__).config.num_vector_core)
    stand_in = SimpleNamespace(split_axis=[0, 1], numels=[cores + 1, 8], blocks=[1, 8])
    try:
        method(stand_in, 1)
    except ZeroDivisionError:
        return False
    return True


SPLIT_BLOCKS_PAST_CORES = Patch(
    id="torch-npu-split-blocks-past-cores",
    proven_by=(
        "tests/common/fixes/test_torch_npu_split_blocks.py::test_past_the_cores_the_axis_keeps_its_whole_length_instead_of_dividing_by_zero",
        "tests/tools/wheel/test_torch_npu_flex.py::test_flex_attention_forward_and_dynamic_backward_lower_by_default",
    ),
    layer="fix",
    why=(
        "torch_npu's TileGenerator.calcu_last_split_blocks divides the vector cores by the programs of the split axes "
        "before the one it sizes, and that axis's length by the result: where those axes already take more programs "
        "than there are cores it divides by zero, and the kernel's configs are never built (flex decoding's "
        "reduction of its split key/value blocks, every flex attention over short queries). The axis then gets its "
        "whole length in one block, what one remaining core gives"
    ),
    upstream=(
        "torch_npu codegen/tile_generator.py TileGenerator.calcu_last_split_blocks (2.7.1.post11 to 2.12.0.post3; "
        "2.13.0 and 2.14.0 have no TileGenerator); seen on 2.11.0.post3 and 2.12.0.post3, whose heuristics reach it "
        "for flex decoding; report text in docs/torch-npu-reports.md"
    ),
    remove_when="every torch_npu release in use keeps at least one split for the axis (the probe then says not needed)",
    patches_package="torch_npu",
    changes=(Change(LAST_SPLIT_BLOCKS, _whole_axis_past_the_cores, optional=True),),
    upstream_has_fix=_never_divides_by_zero,
)

FIXES = (SPLIT_BLOCKS_PAST_CORES,)
