"""The `codegen` command: its arguments, the run in a child, the capture, the report and the --out folder."""
