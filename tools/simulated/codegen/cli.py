"""`python -m npu_inductor_compat codegen SCRIPT.py [options] [-- ARGS...]`: what Inductor generates for device
"npu", without an NPU. Exit codes: 0 every graph generated and one ran on npu; 1 a graph failed, the script raised,
or nothing ran on npu; 2 usage errors (found before the script runs)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from npu_inductor_compat.tools.simulated.codegen import codegen_args
from npu_inductor_compat.tools.simulated.codegen.codegen_child import in_a_child
from npu_inductor_compat.tools.simulated.codegen.codegen_run import run
from npu_inductor_compat.tools.simulated.execution import execute_interpreter

__all__ = ["codegen_main"]


def codegen_main(argv: Sequence[str] | None = None) -> int:
    """Sets the simulated NPU up (an Ascend SoC's properties, ``--soc``), activates this package for it (the normal
    activation path), runs SCRIPT unchanged (``import torch_npu`` included: a stand-in answers it for the run) with
    every Inductor graph captured codegen-only, and writes the wrappers and kernels to --out, with a manifest of what
    it wrote: a later run replaces only those files."""
    invocation = codegen_args.parse(sys.argv[1:] if argv is None else argv)
    if invocation.args.execute:
        execute_interpreter.turn_on()  # before anything imports triton: it decides at decoration time
    choice = invocation.args.provider_choice
    if choice.note is not None:  # the default fell back to stock Inductor: one line, even with --quiet
        print(choice.note, file=sys.stderr, flush=True)
    try:
        return in_a_child(invocation.output, lambda: run(invocation))
    finally:
        invocation.output.release()
