"""`python -m npu_inductor_compat survey`: which of our fixes released torch_npu wheels carry and whether the
torch_npu names we hook exist with the signatures we rely on, read from the wheels (never imported). See
docs/torch-npu-survey.md."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.common.torch_npu_names import TORCH_NPU_HOOKS
from npu_inductor_compat.tools.torch_npu_survey.survey_detectors import FIX_DETECTORS, Finding
from npu_inductor_compat.tools.torch_npu_survey.survey_hooks import check_hook
from npu_inductor_compat.tools.torch_npu_survey.survey_sources import Sources
from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    SurveyError as SurveyError,  # raised here; the tools catch it
)
from npu_inductor_compat.tools.wheel_cache import WHEEL_CACHE_ENV, fetch
from npu_inductor_compat.tools.wheel_cache import release_key as _release_key

# torch_npu release lines surveyed by `--all-lines` (the newest wheel of each). torch_npu publishes two 2.9 lines:
# 2.9.0.postN (for torch 2.9.0) and 2.9.1 (for torch 2.9.1, an older and smaller build).
SURVEY_LINES = ("2.7.1", "2.8.0", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0")


@functools.cache
def _record_lines() -> dict[str, tuple[str, ...]]:
    """Fix id -> the torch lines its record is written for (imports the fix modules; no torch)."""
    from npu_inductor_compat.registry import fix_records

    return {record.id: record.applies_to() for record in fix_records()}


@dataclass
class ReleaseReport:
    torch_npu: str
    source: str
    torch: str | None
    line: str
    fixes: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def survey(path: Path) -> ReleaseReport:
    """Survey one wheel (or unpacked directory). Raises SurveyError naming the file when it is not usable."""
    sources = Sources(path)
    try:
        report = ReleaseReport(sources.version, str(path), sources.torch, sources.line)
        lines = _record_lines()
        for detector in FIX_DETECTORS:
            try:
                finding = detector.check(sources)
            except SurveyError as err:
                finding = Finding(False, f"could not check: {err}")
            needed = detector.fix_id not in lines or report.line in lines[detector.fix_id]
            report.fixes.append(
                {
                    "id": detector.fix_id,
                    "status": "carried" if finding.carried else "not carried",
                    "needed": needed,
                    "evidence": finding.evidence,
                    "notes": list(finding.notes),
                }
            )
        report.hooks = [check_hook(sources, hook).as_dict() for hook in TORCH_NPU_HOOKS]
        return report
    finally:
        sources.close()


def render(reports: Sequence[ReleaseReport], details: bool = True) -> str:
    ordered = sorted(reports, key=lambda r: _release_key(r.torch_npu))
    head = [f"{r.torch_npu} (torch {r.torch or '?'})" for r in ordered]
    out = ["### Fixes: carried by torch_npu itself?", ""]
    out += ["| fix | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for detector in FIX_DETECTORS:
        cells = []
        for report in ordered:
            fix = next(f for f in report.fixes if f["id"] == detector.fix_id)
            extra = [*fix["notes"], *([] if fix["needed"] else [f"n/a on {report.line}"])]
            cells.append(fix["status"] + (f" ({'; '.join(extra)})" if extra else ""))
        out.append(f"| `{detector.fix_id}` | " + " | ".join(cells) + " |")
    out += ["", "### Hooked torch_npu names: present with the signature we rely on?", ""]
    out += ["| name | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for hook in TORCH_NPU_HOOKS:
        cells = []
        for report in ordered:
            result = next(h for h in report.hooks if h["id"] == hook.id)
            alternative = len(hook.candidates) > 1 and result["found"] not in (None, hook.candidates[0])
            cells.append(result["status"] + (" (alt. layout)" if alternative else ""))
        out.append(f"| `{hook.id}` | " + " | ".join(cells) + " |")
    out += [
        "",
        "n/a: the fix's record is not written for that torch line (torch_npu's torch does not need it). "
        "alt. layout: found at the name's other location (see below).",
    ]
    if not details:
        return "\n".join(out)
    out += ["", "### What is checked", ""]
    out += [f"- `{d.fix_id}` is carried when {d.carried_when}." for d in FIX_DETECTORS]
    out += [f"- `{h.id}`: {' or '.join(f'`{c}`' for c in h.candidates)}; {h.used_by}." for h in TORCH_NPU_HOOKS]
    for report in ordered:
        out += ["", f"### torch_npu {report.torch_npu} (torch {report.torch or '?'}, {report.line})", ""]
        out += [f"- `{f['id']}`: {f['status']}: {f['evidence']}" for f in report.fixes]
        out += [f"- `{h['id']}`: {h['status']}: {h['detail']}" for h in report.hooks]
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------------- CLI
def _inputs(paths: Sequence[Path]) -> list[Path]:
    """Wheels and unpacked trees; a directory without torch_npu/ stands for the wheels in it."""
    found = []
    for path in paths:
        if path.is_dir() and not (path / "torch_npu").is_dir():
            wheels = sorted(path.glob("torch_npu-*.whl"))
            if not wheels:
                raise SurveyError(f"{path}: no torch_npu-*.whl and no torch_npu/ directory in it")
            found += wheels
        elif path.exists():
            found.append(path)
        else:
            raise SurveyError(f"{path}: no such file or directory")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat survey",
        description="Which of our fixes released torch_npu wheels carry, and whether the torch_npu names we hook "
        "exist with the signatures we rely on (read from the wheels' sources; torch_npu is never imported).",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="torch_npu wheels, unpacked trees, or dirs of wheels")
    parser.add_argument(
        "--fetch",
        action="append",
        default=[],
        metavar="SPEC",
        help="download the newest torch_npu of a line ('2.9.0') or an exact version ('2.9.0.post9')",
    )
    parser.add_argument("--all-lines", action="store_true", help=f"--fetch each of {', '.join(SURVEY_LINES)}")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help=f"wheel cache (default: ${WHEEL_CACHE_ENV} or ~/.cache/npu-inductor-compat/torch_npu_wheels)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown, or JSON) here")
    args = parser.parse_args(argv)
    specs = [*args.fetch, *(SURVEY_LINES if args.all_lines else ())]
    if not specs and not args.paths:
        parser.error("give wheels or directories, --fetch SPEC or --all-lines")
    try:
        paths = [fetch(spec, args.cache) for spec in specs] + _inputs(args.paths)
        reports = [survey(path) for path in dict.fromkeys(paths)]
    except SurveyError as err:
        print(f"survey: {err}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps([report.as_dict() for report in reports], indent=2)
        print(text)
    else:
        text = render(reports)
        print(render(reports, details=False))
    if args.out:
        args.out.write_text(text + "\n")
        print(f"\nwritten to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
