"""A simulated NPU: the real Inductor pipeline for device "npu" on a machine without one (codegen only); rooms:
npu/ (the device), codegen/, execution/, kernels/, compare/ (diff), wheel/ (torch_npu's released codegen)."""
