"""`python -m npu_inductor_compat codegen SCRIPT.py`: what Inductor generates for device "npu", without an NPU.

Sets the simulated NPU up, activates this package for it (the normal activation path), runs SCRIPT unchanged with
every Inductor graph captured codegen-only, and writes the wrappers and kernels to --out.
Exit codes: 0 every graph generated; 1 a graph failed or the script raised; 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import runpy
import shutil
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # same exit code and format as argparse, one place to say it
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m npu_inductor_compat codegen",
        description="Run SCRIPT with torch.compile's Inductor generating code for a simulated NPU (nothing runs on "
        "a device); write each graph's wrapper and kernels, and summary.json.",
    )
    parser.add_argument("script", help="a Python script that makes 'npu' tensors and calls torch.compile")
    parser.add_argument("--out", default="npu_codegen", help="output directory (default: %(default)s)")
    parser.add_argument("--cpp-wrapper", action="store_true", help="generate the C++ wrapper (cpp_wrapper=True)")
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic shapes from the first call")
    parser.add_argument("--backend", default=None, help="NPU backend: triton (default), mlir, dvm, ascendc")
    parser.add_argument(
        "--without-fix", nargs="+", action="extend", default=[], metavar="ID", help="disable these fix/layer ids"
    )
    parser.add_argument(
        "--kernel-metadata",
        default=None,
        metavar="KEY=VALUE,...",
        help="simulated triton-ascend compiler metadata for every kernel, to see the launch code a kernel needing "
        "workspace or locks gets (needs --cpp-wrapper); keys: " + ", ".join(METADATA_KEYS),
    )
    parser.add_argument(
        "--check-headers",
        action="store_true",
        help="compile each C++ wrapper with g++ -fsyntax-only against torch's and torch_npu's headers (needs "
        "--cpp-wrapper; torch_npu's come from an installed torch_npu or the paired wheel, downloaded once)",
    )
    parser.add_argument(
        "--check-kernels",
        action="store_true",
        help="lower every generated Triton kernel, once per autotune config, through triton-ascend's compiler front "
        "end (TTIR, then linalg; the npubin stage needs CANN): from $NPU_INDUCTOR_COMPAT_TRITON_ASCEND, this "
        "environment's triton if it is triton-ascend, or the wheel installed once into the cache (never into this "
        "environment)",
    )
    return parser


METADATA_KEYS = (
    "workspace_size",
    "lock_num",
    "sync_block_lock_layout",
    "lock_init_val",
    "lock_init_value",
    "mix_mode",
    "auto_tile_and_bind_subblock",
    "force_simt_only",
    "is_pure_simt",
    "parallel_mode",
    "shared_mem_dynamic_size",
    "has_auto_blockify_blacklist_op",
)
TEXT_KEYS = ("mix_mode", "parallel_mode")


def parse_kernel_metadata(text: str) -> dict[str, Any]:
    """``key=value,...`` into metadata fields: integers (decimal or 0x hex), true/false, or a mode name;
    validated exactly as real compiler metadata is. Raises ValueError naming what is wrong."""
    from npu_inductor_compat.common.kernel_metadata import read_launch_metadata

    fields: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key:
            raise ValueError(f"--kernel-metadata: {item!r} is not KEY=VALUE")
        if key not in METADATA_KEYS:
            raise ValueError(f"--kernel-metadata: unknown key {key!r}; valid: {', '.join(METADATA_KEYS)}")
        if key in fields:
            raise ValueError(f"--kernel-metadata: {key!r} given twice")
        value: Any = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        elif key not in TEXT_KEYS:
            try:
                value = int(raw, 0)
            except ValueError:
                raise ValueError(f"--kernel-metadata: {key}={raw!r} is not an integer or true/false") from None
        fields[key] = value
    read_launch_metadata("--kernel-metadata", fields)  # the same validation compiler metadata gets
    return fields


@contextmanager
def _script_argv(script: Path) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _inductor_settings(cpp_wrapper: bool, dynamic: bool) -> ExitStack:
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    stack = ExitStack()
    stack.enter_context(inductor_config.patch(cpp_wrapper=cpp_wrapper))
    if dynamic:
        stack.enter_context(dynamo_config.patch(assume_static_by_default=False))
    return stack


def _clear_previous_run(out: Path) -> None:
    """Remove what an earlier run wrote here (only our own file names), so no stale graph survives."""
    for stale in out.glob("graph_*"):
        if stale.is_dir() and stale.name[len("graph_") :].isdigit():
            shutil.rmtree(stale)
    for name in ("summary.json", "script_error.txt"):
        (out / name).unlink(missing_ok=True)


def _write(out: Path, summary: dict[str, Any], graphs: list[Any], script_traceback: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    _clear_previous_run(out)
    for graph in graphs:
        folder = out / f"graph_{graph.index}"
        (folder / "kernels").mkdir(parents=True, exist_ok=True)
        if graph.wrapper_source is not None:
            (folder / f"wrapper.{'cpp' if graph.wrapper == 'cpp' else 'py'}").write_text(graph.wrapper_source)
        for name, source in graph.kernels.items():
            safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
            (folder / "kernels" / f"{safe}.py").write_text(source)
        if graph.error is not None:
            (folder / "error.txt").write_text(graph.error["traceback"])
    if script_traceback is not None:
        (out / "script_error.txt").write_text(script_traceback)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _table(summary: dict[str, Any]) -> str:
    rows = [("graph", "kind", "wrapper", "kernels", "status")]
    for graph in summary["graphs"]:
        error = graph["error"]
        status = "ok" if error is None else f"{error['type']}: {error['message'].splitlines()[0][:90]}"
        if "header_check" in graph:
            status += ", headers ok" if graph["header_check"] == "ok" else ", HEADER CHECK FAILED"
        if "kernel_check" in graph:
            configs = [result for results in graph["kernel_check"].values() for result in results]
            rejected = sum(1 for result in configs if not result["ok"])
            if rejected:
                status += f", {rejected} of {len(configs)} KERNEL CONFIGS REJECTED by triton-ascend"
            else:
                status += f", {len(configs)} kernel configs lowered"
        rows.append((str(graph["index"]), graph["kind"], graph["wrapper"], str(len(graph["kernels"])), status))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    ]
    if not summary["graphs"]:
        lines.append("(no graph was compiled: does the script call torch.compile on 'npu' tensors?)")
    return "\n".join(lines)


def codegen_main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    script = Path(args.script)
    if not script.is_file():
        parser.error(f"SCRIPT {args.script!r} is not a file")

    from npu_inductor_compat.activation import activate, deactivate, status
    from npu_inductor_compat.common import backends, layers
    from npu_inductor_compat.dispatch import resolve
    from npu_inductor_compat.registry import fix_records

    if args.backend is not None:
        try:
            backends.normalise(args.backend, "--backend")
        except ValueError as err:
            parser.error(str(err))
    from npu_inductor_compat.tools.simulated import device

    line_module = resolve()[1]
    known = {record.id for record in fix_records()} | set(layers.all_layer_ids(line_module.ADAPTERS))
    known |= {record.id for record in device.PROVIDER.records()}
    unknown = sorted(set(args.without_fix) - known)
    if unknown:
        parser.error(f"--without-fix: unknown id(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    metadata: dict[str, Any] = {}
    if args.kernel_metadata is not None:
        try:
            metadata = parse_kernel_metadata(args.kernel_metadata)
        except ValueError as err:
            parser.error(str(err))
    for flag, given in (
        ("--kernel-metadata", args.kernel_metadata is not None),
        ("--check-headers", args.check_headers),
    ):
        if given and not args.cpp_wrapper:
            parser.error(f"{flag} concerns the C++ wrapper: add --cpp-wrapper")

    from npu_inductor_compat.common import providers
    from npu_inductor_compat.tools.simulated.capture import capturing
    from npu_inductor_compat.tools.simulated.kernel_params import simulated_metadata

    try:
        device.setup()
    except RuntimeError as err:  # e.g. no setuptools for torch's cpp_extension: say so, no traceback
        print(f"npu_inductor_compat codegen: cannot set the simulated NPU up: {err}", file=sys.stderr)
        return 1
    previous = providers.set_provider(device.PROVIDER)
    try:
        try:
            report = activate(args.backend, disable=args.without_fix)
        except (ImportError, ValueError, RuntimeError) as err:
            print(f"npu_inductor_compat codegen: activation failed, nothing applied: {err}", file=sys.stderr)
            return 1
        script_error = None
        header_failures = kernel_failures = 0
        import torch

        torch._dynamo.reset()
        with (
            capturing() as capture,
            _inductor_settings(args.cpp_wrapper, args.dynamic),
            simulated_metadata(metadata),
            _script_argv(script),
        ):
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    script_error = {"type": "SystemExit", "message": str(exit_.code), "traceback": ""}
            except BaseException as err:  # the script's own failure is reported, not raised
                script_error = {"type": type(err).__name__, "message": str(err), "traceback": traceback.format_exc()}
        torch._dynamo.reset()
        summary = {
            "script": str(script),
            "torch": torch.__version__,
            "line": report["line"],
            "backend": status()["backend"],
            "cpp_wrapper": args.cpp_wrapper,
            "dynamic": args.dynamic,
            "without_fix": sorted(set(args.without_fix)),
            "kernel_metadata": metadata,
            "fixes": {fix["id"]: fix["status"] for fix in status()["fixes"]},
            "script_error": None if script_error is None else {k: script_error[k] for k in ("type", "message")},
            "graphs": [graph.summary() for graph in capture.graphs],
        }
        out = Path(args.out)
        _write(out, summary, capture.graphs, None if script_error is None else script_error["traceback"])
        if args.check_headers:
            header_failures = _check_headers(out, summary, torch.__version__)
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if args.check_kernels:
            from npu_inductor_compat.tools.simulated import kernel_check

            kernel_failures = kernel_check.check(out, summary)
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        deactivate()
        providers.set_provider(previous)
    print(_table(summary))
    print(f"wrote {out / 'summary.json'}")
    if script_error is not None:
        message = script_error["message"].splitlines()[0] if script_error["message"] else ""
        print(
            f"the script raised {script_error['type']}: {message} (traceback: {out / 'script_error.txt'})",
            file=sys.stderr,
        )
    if args.check_headers:
        check = summary.get("header_check", {})
        if check.get("error"):
            print(f"header check unavailable: {check['error']}", file=sys.stderr)
        elif header_failures:
            print(f"{header_failures} C++ wrapper(s) failed the header check (errors: header_check in summary.json)")
        else:
            print(f"every C++ wrapper compiles against torch's headers and {', '.join(check['headers'])}")
    if args.check_kernels:
        check = summary.get("kernel_check", {})
        if check.get("error"):
            print(f"kernel check: {check['error']}", file=sys.stderr)
        if check.get("triton_ascend"):
            verdict = "every kernel config lowered" if not kernel_failures else f"{kernel_failures} config(s) rejected"
            print(
                f"triton-ascend {check['triton_ascend']} ({check['source']}): {check['configs']} kernel config(s) "
                f"to linalg in {check['seconds']} s: {verdict} (messages: kernel_check in summary.json)"
            )
    failed = (args.check_headers and header_failures) or (args.check_kernels and kernel_failures)
    return 1 if script_error is not None or capture.failed() or failed else 0


def _check_headers(out: Path, summary: dict[str, Any], torch_version: str) -> int:
    """Compile each graph's C++ (as graph_<i>/wrapper_source.cpp) against torch's headers and every paired torch_npu
    release's; record the results in the summary; return how many graphs failed."""
    from npu_inductor_compat.tools.simulated import headers

    try:
        sources = headers.torch_npu_headers(torch_version)
    except headers.HeaderCheckUnavailable as err:
        summary["header_check"] = {"headers": [], "error": str(err)}
        return sum(1 for graph in summary["graphs"] if graph["wrapper"] == "cpp")
    summary["header_check"] = {"headers": [source.description for source in sources], "error": None}
    failures = 0
    for graph in summary["graphs"]:
        wrapper = out / f"graph_{graph['index']}" / "wrapper.cpp"
        if graph["wrapper"] != "cpp" or not wrapper.is_file():
            continue
        cpp = wrapper.with_name("wrapper_source.cpp")
        cpp.write_text(headers.cpp_source(wrapper.read_text()))
        errors = []
        for source in sources:
            ok, output = headers.check(cpp, source)
            if not ok:
                errors.append(f"against {source.description}:\n{output[-4000:]}")
        graph["header_check"] = "ok" if not errors else "\n".join(errors)
        failures += bool(errors)
    return failures
