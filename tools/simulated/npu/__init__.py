"""The simulated NPU itself: torch's PrivateUse1 device named "npu" on host memory, torch.npu's API, its SoC."""
