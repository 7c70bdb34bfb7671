"""Where the suite's files are, for a test module at any depth under tests/: the checkout and tests/ itself."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # tests/: its helpers, golden/, fakes/, scripts/, emulated_acl/, triton_ascend/
ROOT = TESTS.parent  # the checkout: pyproject.toml, README.md, docs/, examples/, the source folders
