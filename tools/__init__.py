"""Tools on the runtime, never imported by it: the simulated NPU (simulated/), the survey (torch_npu_survey/)."""
