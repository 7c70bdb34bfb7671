"""commit-msg hook: a commit's subject (its first line) is at most 72 characters; the why goes in the body.
pre-commit runs it (`pre-commit install` sets up both hook types); `python .ci/commit_msg.py FILE` checks one."""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 72


def subject(message: str) -> str:
    """The first line git keeps: comment lines (``#``, git's template) and leading blank lines are dropped."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    return next((line.rstrip() for line in lines if line.strip()), "")


def problem(message: str) -> str | None:
    first = subject(message)
    if not first:
        return "the commit message is empty"
    if len(first) > LIMIT:
        return f"the subject is {len(first)} characters, at most {LIMIT}: move the rest to the body\n  {first}"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/commit_msg.py COMMIT_MSG_FILE", file=sys.stderr)
        return 2
    found = problem(Path(argv[0]).read_text(encoding="utf-8"))
    if found is not None:
        print(f"commit-msg: {found}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
