"""Test stand-in for torch_npu._inductor.dvm.mlir_fusion (imported by the dvm loader)."""

IMPORTED = True
