"""A simulated NPU for the real Inductor pipeline: npu/, codegen/, execution/, kernels/, compare/, wheel/."""
