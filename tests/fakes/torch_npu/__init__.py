"""Test stand-in for torch_npu: the package exists, nothing else."""
