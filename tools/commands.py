"""The tools' entry points into `python -m npu_inductor_compat` (pyproject.toml registers them): the codegen
command behind its torch line check, and the torch_npu-wheel provider of `fixes --provider`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from npu_inductor_compat.dispatch import UnsupportedTorchVersion, resolve

T = TypeVar("T")


def codegen(argv: Sequence[str]) -> int:
    """``codegen``: refused with exit 1 on a torch no line supports, before the simulated NPU is loaded."""
    try:
        resolve()
    except (UnsupportedTorchVersion, ValueError) as err:
        print(f"npu_inductor_compat codegen: {err}", file=sys.stderr)
        return 1
    from npu_inductor_compat.tools.simulated.codegen.cli import codegen_main

    return codegen_main(list(argv))


def torch_npu_wheel(decide: Callable[[], T]) -> tuple[T, str]:
    """``decide()`` run with torch_npu's released Inductor code loaded (the wheel paired with this torch, on the
    simulated NPU; tools/simulated/wheel/torch_npu_wheel.py), then unloaded; its result and that torch_npu's version.
    Raises ImportError or RuntimeError when the wheel cannot be had or loaded."""
    from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker
    from npu_inductor_compat.tools.simulated.wheel.torch_npu_wheel import wheel_run

    with wheel_run(checker=TtirCheckWorker) as (use, _provider, _events):
        result = decide()
        return result, str(use.summary()["wheel"]["torch_npu"])
