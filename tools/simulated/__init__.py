"""A simulated NPU: the real Inductor pipeline for device "npu" on a machine without one (codegen only)."""
