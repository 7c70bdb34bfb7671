"""The fix-by-torch-line matrix: one markdown table from `fixes --json` results of several torch environments."""

# `nox -s matrix` runs `python -m npu_inductor_compat fixes --json` in one venv per torch line, then
# `python dev/matrix.py RESULT.json ... --out fixes_matrix.md` prints and writes the table and
# exits 1 when any fix is "missing" or "refused" on any line, or "skipped" because it was not written for that line
# (a shared record must apply to every line; a line's own record needs a probe that says where upstream has it).

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_inductor_compat.version import parse_release

START, END = "<!-- fixes-matrix:start -->", "<!-- fixes-matrix:end -->"
TORCH_NPU_START, TORCH_NPU_END = "<!-- torch-npu-matrix:start -->", "<!-- torch-npu-matrix:end -->"


def render(results: Sequence[dict[str, Any]]) -> str:
    """Markdown: a row per fix record, a column per torch line (results are `fixes --json` outputs)."""
    ordered = sorted(results, key=lambda result: parse_release(result["torch"]))
    columns = [column_title(result) for result in ordered]
    ids: list[str] = []
    for result in ordered:
        ids += [fix["id"] for fix in result["fixes"] if fix["id"] not in ids]
    lines = ["| fix | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for fix_id in ids:
        cells = []
        for result in ordered:
            found = {fix["id"]: cell(fix) for fix in result["fixes"]}
            cells.append(found.get(fix_id, "unknown"))
        lines.append(f"| `{fix_id}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cell(fix: dict[str, Any]) -> str:
    """A record's status; "applied (untested)" where no test is named that runs its patched path (``proven_by``)."""
    status = str(fix["status"])
    if status == "applied" and "proven_by" in fix and not fix["proven_by"]:
        return "applied (untested)"
    return status


def column_title(result: dict[str, Any]) -> str:
    """``torch 2.7.1 (v2_7_1)``; with torch_npu's code loaded (`fixes --provider torch_npu-wheel`),
    ``torch 2.7.1 + torch_npu 2.7.1.post11 (v2_7_1)``."""
    with_npu = f" + torch_npu {result['torch_npu']}" if result.get("torch_npu") else ""
    return f"torch {result['torch'].split('+')[0]}{with_npu} ({result['line']})"


def parse(markdown: str) -> dict[str, dict[str, str]]:
    """The table back as {column title: {fix id: status}}."""
    rows = [line for line in markdown.strip().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    table: dict[str, dict[str, str]] = {title: {} for title in header[1:]}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for title, cell in zip(header[1:], cells[1:], strict=True):
            table[title][cells[0].strip("`")] = cell
    return table


def embedded(readme: str, start: str = START, end: str = END) -> str:
    """The table between the matrix markers of a README (``TORCH_NPU_START``/``TORCH_NPU_END``: the one with
    torch_npu's code loaded)."""
    if start not in readme or end not in readme:
        raise ValueError(f"README has no {start} ... {end} block")
    return readme.split(start, 1)[1].split(end, 1)[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python dev/matrix.py", description=__doc__)
    parser.add_argument("results", nargs="+", type=Path, help="`fixes --json` outputs, one per torch line")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    results = [json.loads(path.read_text()) for path in args.results]
    table = render(results)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n")
    problems = problem_cells(results)
    if problems:
        print("not covered: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


def problem_cells(results: Sequence[dict[str, Any]]) -> list[str]:
    """Each fix that is "missing" (needed but not written for that line), "refused" (its replacement does not fit the
    function it replaces there) or "skipped" because it was not written
    for that line (nothing says whether that line needs it), per torch line."""
    found = []
    for result in results:
        for fix in result["fixes"]:
            if fix["status"] in ("missing", "refused"):
                found.append(f"{fix['id']} {fix['status']} on torch {result['torch']} ({fix.get('detail', '')})")
            elif fix["status"] == "skipped" and "written for" in fix.get("detail", ""):
                found.append(f"{fix['id']} skipped on torch {result['torch']} ({fix['detail']})")
    return found


if __name__ == "__main__":
    sys.exit(main())
