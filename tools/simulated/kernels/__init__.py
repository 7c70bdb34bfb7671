"""`codegen --check-kernels`: kernels through triton-ascend's front end in worker processes; the corpora."""
