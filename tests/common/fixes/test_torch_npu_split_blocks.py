"""Record torch-npu-split-blocks-past-cores on a stand-in of torch_npu's TileGenerator that answers as its
calcu_last_split_blocks does (2.12.0.post3 codegen/tile_generator.py: the cores left after the earlier split axes'
programs, then the axis length over them), with a module config.num_vector_core. Real method: test_torch_npu_flex."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from npu_inductor_compat.common.fixes import torch_npu_split_blocks as record_module

CORES = 40


class _TileGenerator:
    def __init__(self, numels: list[int], blocks: list[int], split_axis: list[int]) -> None:
        self.numels, self.blocks, self.split_axis = numels, blocks, split_axis

    def calcu_last_split_blocks(self, axis: int) -> int:
        earlier = self.split_axis[: self.split_axis.index(axis)]
        programs = 1
        for other in earlier:
            programs *= -(-self.numels[other] // self.blocks[other])
        cores_left = config.num_vector_core // programs  # noqa: F821  (the module's, as torch_npu's reads its own)
        return -(-self.numels[axis] // cores_left)


@pytest.fixture
def generator_class() -> Iterator[type]:
    module = types.ModuleType("npu_compat_test_tile_generator")
    module.config = types.SimpleNamespace(num_vector_core=CORES)  # type: ignore[attr-defined]
    module.__dict__["_TileGenerator"] = _TileGenerator
    source = _TileGenerator.calcu_last_split_blocks
    # the method's globals are this module's: give it the stand-in module's config, as torch_npu's module has one
    method = types.FunctionType(source.__code__, module.__dict__, source.__name__)
    cls = type("TileGenerator", (_TileGenerator,), {"calcu_last_split_blocks": method, "__module__": module.__name__})
    sys.modules[module.__name__] = module
    yield cls
    del sys.modules[module.__name__]


def test_past_the_cores_the_axis_keeps_its_whole_length_instead_of_dividing_by_zero(generator_class: Any) -> None:
    # flex decoding's reduction over its split blocks: 296 programs on the first split axis, 40 cores
    generator = generator_class([296, 2, 148], [1, 2, 148], [0, 1])
    with pytest.raises(ZeroDivisionError):
        generator.calcu_last_split_blocks(1)
    fixed = record_module._whole_axis_past_the_cores(generator_class.calcu_last_split_blocks)
    assert fixed(generator, 1) == 2


def test_within_the_cores_the_answer_is_torch_npus(generator_class: Any) -> None:
    generator = generator_class([8, 64, 16], [1, 64, 16], [0, 1])  # 8 programs before axis 1: 5 splits left
    fixed = record_module._whole_axis_past_the_cores(generator_class.calcu_last_split_blocks)
    assert fixed(generator, 1) == generator.calcu_last_split_blocks(1) == 13
    assert fixed(generator, 0) == generator.calcu_last_split_blocks(0) == 1  # the first axis: every core
