"""Test stand-in for torch_mlir."""
