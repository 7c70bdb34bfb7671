"""`python -m npu_inductor_compat diff DIR_A DIR_B`: what changed in the code Inductor generated for "npu" between
two ``codegen`` outputs (e.g. one script on two torch lines). Reads only the files codegen wrote; imports no torch."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from npu_inductor_compat.tools.simulated.codegen.codegen_args import number_argument
from npu_inductor_compat.tools.simulated.compare.diff_compare import Settings, compare
from npu_inductor_compat.tools.simulated.compare.diff_input import NotACodegenOutput, load
from npu_inductor_compat.tools.simulated.compare.diff_render import render

SAME, DIFFERENT, TROUBLE = 0, 1, 2  # exit codes, like diff(1); trouble: not a codegen output, or a damaged one


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat diff",
        description="Compare two `codegen --out` directories (e.g. one script on two torch lines) graph by graph: "
        "graphs, kernels (launch metadata and body) and wrappers. Exit 0: no differences, 1: differences, "
        "2: trouble.",
    )
    parser.add_argument("dir_a", metavar="DIR_A", help="a codegen output directory (the baseline)")
    parser.add_argument("dir_b", metavar="DIR_B", help="another codegen output directory")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--verbose", "-v", action="store_true", help="show the wrappers' diffs too")
    parser.add_argument(
        "--context", type=_context, default=3, metavar="N", help="context lines in diffs (default: %(default)s)"
    )
    parser.add_argument("--full", action="store_true", help="do not cap diffs and metadata listings")
    return parser


_context = number_argument(
    int, lambda value: value >= 0, "{text} is not a number of lines", "{value} is negative: give 0 or more lines"
)


def diff_main(argv: Sequence[str] | None = None) -> int:
    """The ``diff`` command: prints the comparison, returns the exit code (0 same, 1 different, 2 trouble)."""
    args = build_parser().parse_args(argv)
    settings = Settings(context=args.context, full=args.full)
    try:
        a, b = load(Path(args.dir_a)), load(Path(args.dir_b))
        report = compare(a, b, settings)
    except NotACodegenOutput as err:
        print(f"npu_inductor_compat diff: {err}", file=sys.stderr)
        return TROUBLE
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render(report, verbose=args.verbose, full=args.full))
    return DIFFERENT if report.different else SAME


if __name__ == "__main__":
    sys.exit(diff_main())
