"""Test stand-in for torch_npu's MLIR Inductor plugin: registration is an explicit call, as in the real one."""

from torch_npu._inductor._register import register


def register_mlir_codegen_backend() -> None:
    register("Mlir")
