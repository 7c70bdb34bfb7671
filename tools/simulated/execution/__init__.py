"""`codegen --execute`: generated wrappers and kernels run (Triton's interpreter) and compared with eager."""
