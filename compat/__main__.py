"""`python -m npu_inductor_compat`: the report — versions, the chosen line and why, the backend, every fix's status."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_inductor_compat import entry_points
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


BUILT_IN = ("fixes",)  # commands of the runtime itself; the tools' register as entry points (entry_points.py)


def main(argv: Sequence[str] | None = None) -> int:
    # torch warns "Failed to initialize NumPy" at import when numpy is not installed; no command here uses numpy
    # (torch does not require it), so that is noise. Nothing has imported torch yet at this point.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat",
        usage="%(prog)s [--json] [--backend NAME] | COMMAND [ARGS...]",
        description="Activate for the installed torch and report what was chosen and applied.",
        epilog="Commands: 'fixes [--json]' lists the fix records and their status; the tools installed with the "
        f"package add: {', '.join(entry_points.names(entry_points.COMMANDS)) or 'none'} (e.g. 'codegen SCRIPT.py' "
        "shows what Inductor generates for NPU without an NPU, 'diff DIR_A DIR_B' compares two codegen outputs). "
        "'COMMAND --help' says more.",
    )
    if argv and not argv[0].startswith("-"):
        return _command(parser, argv[0], argv[1:])
    parser.add_argument("--version", action="version", version=_version_text())
    parser.add_argument("--json", action="store_true", help="print status() as JSON")
    parser.add_argument(
        "--backend", default=None, metavar="NAME", help="NPU backend to activate (triton, mlir, dvm, ascendc)"
    )
    args = parser.parse_args(argv)
    report = _activate_or_explain(args.backend)
    if report is None:
        return 1
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _command(parser: argparse.ArgumentParser, name: str, argv: list[str]) -> int:
    """A built-in command, or a tool's found by name in the package's entry points (the runtime never imports the
    tools); an unknown name is a usage error naming the valid ones, missing tools exit 2 saying so."""
    if name == "fixes":
        return _fixes(argv)
    if name not in entry_points.names(entry_points.COMMANDS):
        parser.error(entry_points.unknown(entry_points.COMMANDS, name, "command", BUILT_IN))
    try:
        command = entry_points.load(entry_points.COMMANDS, name, "command")
    except entry_points.NotInstalled as err:
        print(f"npu_inductor_compat {name}: {err}", file=sys.stderr)
        return 2
    result: int = command(argv)
    return result


def fix_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The fix records (torch-side, backend-independent) from a status() report."""
    return [fix for fix in report["fixes"] if fix["layer"] == "fix"]


def _fixes(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npu_inductor_compat fixes",
        description="Every fix record for the installed torch: id, why, upstream reference and status "
        "(applied / not needed: upstream has it / skipped: why / missing / refused: its replacement does not fit).",
    )
    parser.add_argument("--json", action="store_true", help="print JSON: torch, line and the records")
    parser.add_argument("--out", default=None, help="with --json: write the JSON to this file instead")
    providers = entry_points.names(entry_points.FIX_PROVIDERS)
    parser.add_argument(
        "--provider",
        default=None,
        metavar="NAME",
        help="decide the records with that provider's code loaded (installed: "
        f"{', '.join(providers) or 'none'}; torch_npu-wheel: the Python of the torch_npu wheel paired with this "
        "torch, on the simulated NPU, the codegen tool's provider; downloaded once, never installed)",
    )
    args = parser.parse_args(argv)
    if args.out is not None and not args.json:
        parser.error("--out writes the JSON: give --json with it")
    if args.provider is not None and args.provider not in providers:
        parser.error("--provider: " + entry_points.unknown(entry_points.FIX_PROVIDERS, args.provider, "provider"))
    problem = None if args.out is None else _out_file_problem(Path(args.out))
    if problem is not None:
        print(f"npu_inductor_compat fixes: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    torch_npu = None
    if args.provider is None:
        report = _activate_or_explain(None)
    else:
        report, torch_npu = _with_provider(args.provider)
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


def _with_provider(name: str) -> tuple[dict[str, Any] | None, str | None]:
    """activate() with a fix provider's code loaded (a tool: entry_points.FIX_PROVIDERS, loaded only when asked
    for), then undone; the report and what the provider loaded, or (None, None) after printing why it could not run.
    A provider is ``provider(decide) -> (decide(), what it loaded)``."""

    def decide() -> dict[str, Any] | None:
        report = _activate_or_explain(None)
        deactivate()
        return report

    try:
        provider = entry_points.load(entry_points.FIX_PROVIDERS, name, "provider")
        report, loaded = provider(decide)
        return report, str(loaded)
    except (ImportError, RuntimeError) as err:
        print(f"npu_inductor_compat fixes: the {name} provider failed: {err}", file=sys.stderr)
    return None, None


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
