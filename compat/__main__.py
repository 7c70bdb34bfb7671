"""`python -m npu_inductor_compat`: the report — versions, the chosen line and why, the backend, every fix's status."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_inductor_compat.activation import activate, deactivate
from npu_inductor_compat.dispatch import UnsupportedTorchVersion, resolve
from npu_inductor_compat.patching import PatchError


def format_report(report: dict[str, Any]) -> str:
    versions = report["versions"]
    lines = ["npu-inductor-compat report", ""]
    for name in ("npu_inductor_compat", "python", "torch", "torch_npu", "triton", "triton_ascend"):
        lines.append(f"  {name:<20} {versions.get(name) or 'not installed'}")
    lines += ["", f"line     {report['line']}  ({report['line_reason']})"]
    lines.append(f"backend  {report['backend'] or 'none (no backend layers applied)'}")
    for item in report["skipped"]:
        lines.append(f"  skipped {item['what']}: {item['why']}")
    lines += ["", "fixes and layers:"]
    if not report["fixes"]:
        lines.append("  (none declared)")
    width = max((len(fix["id"]) for fix in report["fixes"]), default=0)
    for fix in report["fixes"]:
        state = fix["status"] + (f": {fix['detail']}" if fix["detail"] else "")
        lines.append(f"  {fix['id']:<{width}}  [{fix['layer']}]  {state}")
    return "\n".join(lines)


def _activate_or_explain(backend: str | None) -> dict[str, Any] | None:
    """activate(), or None after printing why it failed (nothing is left applied)."""
    try:
        return activate(backend)
    except UnsupportedTorchVersion as err:
        print(f"npu_inductor_compat: unsupported torch: {err}", file=sys.stderr)
    except (ImportError, ValueError, PatchError) as err:
        print(f"npu_inductor_compat: activation failed, nothing applied: {err}", file=sys.stderr)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    # torch warns "Failed to initialize NumPy" at import when numpy is not installed; no command here uses numpy
    # (torch does not require it), so that is noise. Nothing has imported torch yet at this point.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["codegen"]:
        return _codegen(argv[1:])
    if argv[:1] == ["fixes"]:
        return _fixes(argv[1:])
    if argv[:1] == ["diff"]:
        return _tool("npu_inductor_compat.tools.simulated.diff:diff_main", argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat",
        description="Activate for the installed torch and report what was chosen and applied.",
        epilog="Subcommands: 'fixes [--json]' lists the fix records and their status; 'codegen SCRIPT.py [...]' "
        "shows what Inductor generates for NPU, without an NPU; 'diff DIR_A DIR_B' compares two codegen outputs "
        "(e.g. one per torch line).",
    )
    parser.add_argument("--version", action="version", version=_version_text())
    parser.add_argument("--json", action="store_true", help="print status() as JSON")
    parser.add_argument("--backend", default=None, help="NPU backend to activate (triton, mlir, dvm, ascendc)")
    args = parser.parse_args(argv)
    report = _activate_or_explain(args.backend)
    if report is None:
        return 1
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def fix_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The fix records (torch-side, backend-independent) from a status() report."""
    return [fix for fix in report["fixes"] if fix["layer"] == "fix"]


def _fixes(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat fixes",
        description="Every fix record for the installed torch: id, why, upstream reference and status "
        "(applied / not needed: upstream has it / skipped: why / missing).",
    )
    parser.add_argument("--json", action="store_true", help="print JSON: torch, line and the records")
    parser.add_argument("--out", default=None, help="with --json: write the JSON to this file instead")
    parser.add_argument(
        "--provider",
        choices=(TORCH_NPU_WHEEL,),
        default=None,
        help="decide the records with torch_npu's own Inductor code loaded: the Python of the torch_npu wheel "
        "paired with this torch, on the simulated NPU (the codegen tool's provider; downloaded once, never installed)",
    )
    args = parser.parse_args(argv)
    if args.out is not None and not args.json:
        parser.error("--out writes the JSON: give --json with it")
    problem = None if args.out is None else _out_file_problem(Path(args.out))
    if problem is not None:
        print(f"npu_inductor_compat fixes: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    torch_npu = None
    if args.provider is None:
        report = _activate_or_explain(None)
    else:
        report, torch_npu = _with_torch_npu_wheel()
    if report is None:
        return 1
    rows = fix_rows(report)
    if args.json:
        result = {"torch": report["versions"]["torch"], "line": report["line"], "fixes": rows}
        text = json.dumps({**result, **({"torch_npu": torch_npu} if torch_npu else {})}, indent=2)
        if args.out:
            try:
                Path(args.out).write_text(text + "\n")
            except OSError as err:
                print(f"npu_inductor_compat fixes: --out {args.out}: cannot write: {err.strerror}", file=sys.stderr)
                return 2
        else:
            print(text)
        return 0
    print(
        f"torch {report['versions']['torch']} -> {report['line']}" + (f" (torch_npu {torch_npu})" if torch_npu else "")
    )
    for fix in rows:
        state = fix["status"] + (f": {fix['detail']}" if fix["detail"] else "")
        print(f"\n{fix['id']}  [{state}]\n  why:      {fix['why']}\n  upstream: {fix['upstream']}")
        print(f"  remove:   {fix['remove_when']}")
    return 0


def _out_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot take the JSON (checked before anything is activated), or None."""
    if path.is_dir():
        return "is a directory; give a file path, e.g. fixes.json in it"
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist; create it first"
    return None


TORCH_NPU_WHEEL = "torch_npu-wheel"


def _with_torch_npu_wheel() -> tuple[dict[str, Any] | None, str | None]:
    """activate() with torch_npu's released Inductor code loaded (tools/simulated/torch_npu_wheel.py), then undone;
    (None, None) after printing why it could not run. The tool is loaded only when asked for."""
    import importlib

    try:
        wheel = importlib.import_module("npu_inductor_compat.tools.simulated.torch_npu_wheel")
        with wheel.wheel_run() as (use, _provider, _events):
            report = _activate_or_explain(None)
            deactivate()
            return report, use.summary()["wheel"]["torch_npu"]
    except (ImportError, RuntimeError) as err:
        print(f"npu_inductor_compat fixes: the {TORCH_NPU_WHEEL} provider failed: {err}", file=sys.stderr)
    return None, None


def _codegen(argv: list[str]) -> int:
    """The codegen command is a tool (the simulated NPU), loaded only when asked for."""
    try:
        resolve()
    except (UnsupportedTorchVersion, ValueError) as err:
        print(f"npu_inductor_compat codegen: {err}", file=sys.stderr)
        return 1
    return _tool("npu_inductor_compat.tools.simulated.cli:codegen_main", argv)


def _tool(target: str, argv: list[str]) -> int:
    """Tools (the simulated NPU, the codegen diff) are loaded only when asked for: the runtime never imports them."""
    from npu_inductor_compat import targets

    result: int = targets.resolve(target)(argv)
    return result


def _version_text() -> str:
    """This package's version and the torch line it dispatches to (without activating anything)."""
    from npu_inductor_compat import __version__

    try:
        line = f"torch line {resolve()[1].name}"
    except (UnsupportedTorchVersion, ValueError) as err:
        line = f"no torch line: {err}"
    return f"npu-inductor-compat {__version__} ({line})"


if __name__ == "__main__":
    sys.exit(main())
