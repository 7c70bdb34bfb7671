"""Tools built on the runtime and never imported by it: the simulated NPU with its codegen CLI (simulated/), the
torch_npu wheel survey (torch_npu_survey/)."""
