"""Tools built on the runtime and never imported by it: the simulated NPU with its codegen CLI, the survey."""
