"""The NPU device Inductor sees: its layers, codegen, C++ wrapper, kernel launch and launch metadata."""
