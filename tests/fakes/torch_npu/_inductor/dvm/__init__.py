"""Test stand-in for torch_npu._inductor.dvm."""
