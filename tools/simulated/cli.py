"""`python -m npu_inductor_compat codegen SCRIPT.py [options] [-- ARGS...]`: what Inductor generates for device
"npu", without an NPU.

Sets the simulated NPU up (an Ascend SoC's properties, ``--soc``), activates this package for it (the normal
activation path), runs SCRIPT unchanged (``import torch_npu`` included: a stand-in answers it for the run) with
every Inductor graph captured codegen-only, and writes the wrappers and kernels to --out, with a manifest of what it
wrote: a later run replaces only those files.
Exit codes: 0 every graph generated and at least one ran on npu; 1 a graph failed, the script raised, or nothing ran
on npu; 2 usage errors (found before the script runs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import runpy
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from npu_inductor_compat.common import kernel_metadata
from npu_inductor_compat.tools.simulated.output import (
    MANIFEST,
    MANIFEST_TOOL,
    SUMMARY,
    Output,
    Refused,
    UsageError,
    prepare_output,
)

__all__ = ["MANIFEST", "MANIFEST_TOOL", "SUMMARY", "codegen_main"]  # diff.py imports the first three from here

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # same exit code and format as argparse, one place to say it
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m npu_inductor_compat codegen",
        usage="%(prog)s SCRIPT [options] [-- ARGS...]",
        description="Run SCRIPT with torch.compile's Inductor generating code for a simulated NPU (nothing runs on "
        "a device); write each graph's wrapper and kernels, and summary.json. ARGS after -- become the script's "
        "sys.argv[1:]. `import torch_npu` and torch.npu.* work in the script (a stand-in, for this run only).",
    )
    parser.add_argument("script", help="a Python script that makes 'npu' tensors and calls torch.compile")
    parser.add_argument(
        "--out",
        default="npu_codegen",
        help="output directory (default: %(default)s); a directory holding other files is refused unless --force",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty --out this command did not write (nothing in it is deleted; files of the same "
        "name are overwritten)",
    )
    from npu_inductor_compat.tools.simulated.soc import DEFAULT_SOC, SOCS

    parser.add_argument(
        "--soc",
        default=None,
        metavar="NAME",
        help=f"the Ascend SoC the simulated NPU reports (default {DEFAULT_SOC}; one of {', '.join(SOCS)})",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines and no table (errors still go to stderr)"
    )
    from npu_inductor_compat.tools.simulated import provider_choice

    parser.add_argument(
        "--provider",
        type=provider_choice.parse,
        default=None,
        metavar="{" + ",".join(provider_choice.PROVIDERS) + "}",
        help="who generates the npu code: torch_npu's own released Inductor code from the torch_npu wheel that "
        "requires exactly this torch (torch_npu-wheel: downloaded once, never installed; the default where such a "
        "pair runs: torch " + ", ".join(sorted(provider_choice.runnable())) + "), or stock Inductor (stock: the "
        "default elsewhere, said in one line). With --cpp-wrapper the C++ wrapper is this package's (fix "
        "cpp-wrapper-workspace-locks), or torch_npu's own without that fix; summary.json names the class per graph",
    )
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


# two names of one field: the compiler's, and the one triton-ascend 3.2.0's driver reads
SAME_FIELD = (("lock_init_val", "lock_init_value"),)
# kernel_metadata's FIELDS, each alias of SAME_FIELD right after the field it names
METADATA_KEYS = tuple(
    key for field in kernel_metadata.FIELDS for key in (field, *(b for a, b in SAME_FIELD if a == field))
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
    for names in SAME_FIELD:
        given = [name for name in names if name in fields]
        if len(given) > 1:
            raise ValueError(
                f"--kernel-metadata: {' and '.join(given)} name the same field (the compiler's name and "
                f"triton-ascend 3.2.0's); give one of them"
            )
    read_launch_metadata("--kernel-metadata", fields)  # the same validation compiler metadata gets
    return fields


class Progress:
    """Progress and announcements on stderr (silent with --quiet)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Under --quiet, what a phase prints on stderr (build and download announcements) is dropped."""
        if not self.quiet:
            yield
            return
        with contextlib.redirect_stderr(io.StringIO()):
            yield

    def graph(self, record: Any) -> None:
        where = f"on {record.device}"
        if record.kind == "backward" and record.forward is not None:
            where = f"of graph {record.forward} {where}"
        kernels = f"{len(record.kernels)} kernel{'s' if len(record.kernels) != 1 else ''}"
        if record.error is not None:
            outcome = f"FAILED: {record.error['type']}: {first_line(record.error['message'])}"
        elif record.status == "not npu":
            outcome = f"not npu (no npu tensor), {kernels}"
        else:
            outcome = f"{record.wrapper} wrapper, {kernels}" + (", dynamic" if record.dynamic else "")
        self.say(f"graph {record.index}: {record.kind} {where}: {outcome}, {record.seconds:.1f} s")


def first_line(message: str, width: int = 100) -> str:
    """The first line of an error message, or "(no message)" (a bare assert in Inductor has none); past ``width``
    it is cut at the last space before it (never inside a word) and ends with "..."."""
    lines = message.strip().splitlines()
    if not lines:
        return "(no message)"
    line = lines[0]
    if len(line) <= width:
        return line
    cut = line.rfind(" ", 0, width + 1)
    return line[: cut if cut > 0 else width].rstrip() + " ..."


def split_script_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(codegen's own arguments, the script's arguments): everything after the first ``--`` is the script's."""
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


@contextmanager
def _script_argv(script: Path, script_args: Sequence[str]) -> Iterator[None]:
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent.resolve()))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)  # a training script may chdir; codegen's own paths are absolute anyway


def _codegen_settings(cpp_wrapper: bool, dynamic: bool) -> dict[str, dict[str, Any]]:
    """The config the run compiles with, in every thread (capture.capturing applies it)."""
    settings: dict[str, dict[str, Any]] = {"torch._inductor.config": {"cpp_wrapper": cpp_wrapper}}
    if dynamic:
        settings["torch._dynamo.config"] = {"assume_static_by_default": False}
    return settings


class _CudaOnlyNotes(logging.Filter):
    """Inductor's "Not enough SMs to use max_autotune_gemm mode" (torch/_inductor/utils.py, is_big_gpu) compares a
    device's multiprocessor count with a CUDA card's 68 SMs; an Ascend device reports its AI cores there, so the note
    says nothing about NPU code generation. It is dropped for the run; anything else Inductor logs passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "Not enough SMs to use max_autotune_gemm mode"


@contextmanager
def _cuda_notes_dropped() -> Iterator[None]:
    logger, note = logging.getLogger("torch._inductor.utils"), _CudaOnlyNotes()
    logger.addFilter(note)
    try:
        yield
    finally:
        logger.removeFilter(note)


@contextmanager
def _cpp_extension_quiet() -> Iterator[None]:
    """torch's cpp_extension warns "No CUDA runtime is found" when imported on a machine without CUDA: true, and
    irrelevant to a simulated NPU built for the CPU."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def _write_graph(output: Output, graph: Any) -> dict[str, Any]:
    """Write one graph's files; return its index entry (paths relative to --out)."""
    from npu_inductor_compat.tools.simulated import headers
    from npu_inductor_compat.tools.simulated.capture import kernel_definition

    folder = f"graph_{graph.index}"
    files: dict[str, Any] = {"wrapper": None, "wrapper_module": None, "kernels": {}, "error": None}
    # "error": the graph's traceback file; "wrapper_error": why a C++ wrapper has no wrapper.cpp
    if graph.wrapper_source is not None:
        if graph.wrapper == "cpp":
            # Inductor hands back a Python module that compiles the C++ it carries: keep both, the C++ as C++
            files["wrapper_module"] = output.write(f"{folder}/wrapper_module.py", graph.wrapper_source)
            try:
                files["wrapper"] = output.write(f"{folder}/wrapper.cpp", headers.cpp_source(graph.wrapper_source))
            except ValueError as err:
                files["wrapper_error"] = f"no C++ found in the wrapper module: {err}"
        else:
            files["wrapper"] = output.write(f"{folder}/wrapper.py", graph.wrapper_source)
    for name, fragment in graph.kernels.items():
        safe = _safe_name(name)
        definition = kernel_definition(fragment)
        entry = {
            "defined_with": definition.method,
            "fragment": output.write(f"{folder}/kernels/{safe}.fragment.py", fragment),
            "source": None,
        }
        if definition.method == "triton" and definition.source is not None:
            entry["source"] = output.write(f"{folder}/kernels/{safe}.py", definition.source)
        files["kernels"][name] = entry
    if graph.error is not None:
        files["error"] = output.write(f"{folder}/error.txt", graph.error["traceback"])
    return files


def _table(summary: dict[str, Any]) -> str:
    rows = [("graph", "compile", "kind", "device", "wrapper", "kernels", "status")]
    for graph in summary["graphs"]:
        error = graph["error"]
        status = graph["status"] if error is None else f"{error['type']}: {first_line(error['message'], 90)}"
        if "header_check" in graph:
            status += ", headers ok" if graph["header_check"] == "ok" else ", HEADER CHECK FAILED"
        if "kernel_check" in graph:
            configs = [result for results in graph["kernel_check"].values() for result in results]
            rejected = sum(1 for result in configs if not result["ok"])
            if rejected:
                status += f", {rejected} of {len(configs)} KERNEL CONFIGS REJECTED by triton-ascend"
            else:
                status += f", {len(configs)} kernel configs lowered"
        kind = graph["kind"] + (f" of {graph['forward']}" if graph.get("forward") is not None else "")
        kind += " (dynamic)" if graph["dynamic"] else ""
        rows.append(
            (
                str(graph["index"]),
                graph["compile_id"] or "-",
                kind,
                graph["device"],
                graph["wrapper"],
                str(len(graph["kernels"])),
                status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:6], widths, strict=True)) + "  " + row[6]
        for row in rows
    )


def _nothing_on_npu(summary: dict[str, Any]) -> str | None:
    """Why the run proves nothing about npu code generation, or None when some graph ran on npu."""
    graphs = summary["graphs"]
    if any("npu" in graph["device"].split("+") for graph in graphs):
        return None
    if not graphs:
        return "no graph was compiled: does the script call torch.compile on 'npu' tensors?"
    devices = sorted({graph["device"] for graph in graphs})
    return (
        f"nothing ran on npu: {len(graphs)} graph(s) compiled, on {', '.join(devices)}; move the model and its inputs "
        "to the npu (.to('npu')) before calling the compiled function"
    )


def _failed_where(script_error: dict[str, Any]) -> str:
    """Where a script that compiled nothing failed: at an import, or elsewhere."""
    if script_error["type"] in ("ImportError", "ModuleNotFoundError"):
        return f"at import: {first_line(script_error['message'])}"
    return f"{script_error['type']}: {first_line(script_error['message'])}"


def _without_fix_notes(ids: Sequence[str], report: dict[str, Any], torch_version: str) -> list[str]:
    """One line per --without-fix ID whose disabling changes nothing on this torch (not needed, or not applied)."""
    from npu_inductor_compat.dispatch import resolve
    from npu_inductor_compat.patching import absent_targets
    from npu_inductor_compat.registry import fix_records

    layers = resolve()[1].backend_plan(report["backend"], None).layers  # the backend's device/backend/config layers
    records = {record.id: record for record in (*fix_records(), *layers)}
    listed = {fix["id"] for fix in report["fixes"]}
    notes = []
    for fix_id in sorted(set(ids)):
        record = records.get(fix_id)
        absent = absent_targets(record) if record is not None else None
        if record is not None and report["line"] not in record.applies_to():
            notes.append(
                f"--without-fix {fix_id}: written for {', '.join(record.applies_to())}, not {report['line']} (torch "
                f"{torch_version}): disabling it changes nothing here"
            )
        elif absent is not None:
            notes.append(f"--without-fix {fix_id}: nothing to patch ({absent}): disabling it changes nothing here")
        elif record is not None and record.upstream_has_fix is not None and record.upstream_has_fix():
            notes.append(
                f"--without-fix {fix_id}: not needed on torch {torch_version} (upstream has it): disabling it "
                "changes nothing here"
            )
        elif fix_id not in listed:
            notes.append(
                f"--without-fix {fix_id}: not part of backend {report['backend']!r} on this torch: disabling it "
                "changes nothing here"
            )
    return notes


def codegen_main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    own_args, script_args = split_script_args(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(own_args)
    script = Path(args.script)
    if not script.is_file():
        parser.error(f"SCRIPT {args.script!r} is not a file")

    from npu_inductor_compat.activation import activate, deactivate, status
    from npu_inductor_compat.common import backend_table, layers
    from npu_inductor_compat.dispatch import resolve
    from npu_inductor_compat.registry import fix_records

    if args.backend is not None:
        try:
            backend_table.normalise(args.backend, "--backend")
        except ValueError as err:
            parser.error(str(err))
    from npu_inductor_compat.tools.simulated import device, soc
    from npu_inductor_compat.version import installed_torch as torch_version

    try:
        chosen_soc = soc.get_soc(args.soc if args.soc is not None else soc.DEFAULT_SOC)
    except ValueError as err:
        parser.error(f"--soc: {err}")
    known = {record.id for record in fix_records()} | set(layers.all_layer_ids(resolve()[1].adapters))
    known |= {record.id for record in device.PROVIDER.records()}
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
    from npu_inductor_compat.tools.simulated import provider_choice, torch_npu_wheel

    try:
        choice = provider_choice.choose(torch_version().text, args.provider)
    except provider_choice.ProviderUnavailable as err:
        parser.error(f"--provider {args.provider}: {err}")
    args.provider, args.provider_choice = choice.provider, choice
    if choice.release is not None:
        # its records depend on the release (torch_npu_wheel.RELEASES); its backend loading is not offered
        known |= {record.id for record in torch_npu_wheel.provider(release=choice.release).records()}
    unknown = sorted(set(args.without_fix) - known)
    if unknown:
        parser.error(f"--without-fix: unknown id(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    try:
        output = prepare_output(Path(args.out), args.force)
    except UsageError as err:
        parser.error(str(err))
    if choice.note is not None:  # the default fell back to stock Inductor: one line, even with --quiet
        print(choice.note, file=sys.stderr, flush=True)
    try:
        return _in_a_child(
            output,
            lambda: _run(args, script, script_args, output, chosen_soc.name, metadata, (activate, deactivate, status)),
        )
    finally:
        output.release()


def _in_a_child(output: Output, run: Callable[[], int]) -> int:
    """``run()`` (the script, then writing --out) in a forked child, while this process holds --out's lock and
    waits; the child's exit code, or 1 when it ended before writing summary.json.

    Why a child: the script runs in codegen's process, so a script that ends it early (os._exit, a signal, a fork
    whose parent exits) would otherwise end codegen with the script's status and no summary, unnoticed. The child
    reports its code on a pipe once --out is complete; no report is said and exits 1. A fork, not a new interpreter:
    torch is imported already, and nothing has run on it yet.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # ends here (os._exit, as multiprocessing's forked children do): never returns to a caller
        code = 1
        try:
            os.close(read_end)
            output.owner = os.getpid()
            try:
                code = run()
            except Refused as err:
                print(
                    f"npu_inductor_compat codegen: {err}; stopped (the manifest lists what was written)",
                    file=sys.stderr,
                )
            except KeyboardInterrupt:
                print("npu_inductor_compat codegen: interrupted (the manifest lists what was written)", file=sys.stderr)
                code = 130
            if os.getpid() == output.owner:
                os.write(write_end, str(code).encode())
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    handlers: dict[int, Any] = {}
    try:  # SIGTERM to codegen ends the child too; Ctrl-C reaches the child from the terminal
        handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, lambda signum, _: os.kill(child, signum))
        handlers[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: no handlers
        pass
    try:
        _, status = os.waitpid(child, 0)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    os.set_blocking(read_end, False)
    try:
        report = os.read(read_end, 32)
    except BlockingIOError:
        report = b""
    os.close(read_end)
    if report:
        return int(report)
    code = os.waitstatus_to_exitcode(status)
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"ended with status {code}"
    manifest = output.root / MANIFEST
    wrote = f"{manifest} lists every file codegen left there" if manifest.is_file() else "it wrote nothing"
    print(
        f"npu_inductor_compat codegen: the run {how} before summary.json was written (did the script call "
        f"os._exit, or fork and end?); {wrote}",
        file=sys.stderr,
    )
    return 1


def _end_a_forked_copy(output: Output) -> None:
    """A process the script forked that returns here (the script ended in it too) ends: only one process writes."""
    if os.getpid() != output.owner:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _run(
    args: argparse.Namespace,
    script: Path,
    script_args: list[str],
    output: Output,
    soc_name: str,
    metadata: dict[str, Any],
    api: tuple[Any, Any, Any],
) -> int:
    activate, deactivate, status = api
    from npu_inductor_compat.common import providers
    from npu_inductor_compat.tools.simulated import device
    from npu_inductor_compat.tools.simulated.capture import capturing
    from npu_inductor_compat.tools.simulated.kernel_params import simulated_metadata
    from npu_inductor_compat.tools.simulated.standin import torch_npu_standin

    progress = Progress(args.quiet)
    try:
        with progress.muted(), _cpp_extension_quiet():
            device.setup()
    except RuntimeError as err:  # e.g. no setuptools for torch's cpp_extension: say so, no traceback
        print(f"npu_inductor_compat codegen: cannot set the simulated NPU up: {err}", file=sys.stderr)
        return 1
    previous_soc = device.use_soc(soc_name)  # before torch_npu's code loads: it reads the SoC version at import
    run_stack = ExitStack()
    events = None
    try:
        if args.provider == "torch_npu-wheel":
            from npu_inductor_compat.patching import ActivationFailed
            from npu_inductor_compat.tools.simulated import torch_npu_wheel

            try:
                with progress.muted():
                    deep, _, events = run_stack.enter_context(torch_npu_wheel.wheel_run())
            except (torch_npu_wheel.WheelUnavailable, ActivationFailed) as err:
                default = args.provider_choice.requested is None
                hint = " (the default on this torch; --provider stock runs stock Inductor instead)" if default else ""
                print(f"npu_inductor_compat codegen: the torch_npu-wheel provider failed: {err}{hint}", file=sys.stderr)
                return 1
            standin_context: Any = contextlib.nullcontext(deep)  # the deep stand-in is already in place
        else:
            run_stack.callback(providers.set_provider, providers.set_provider(device.PROVIDER))
            standin_context = torch_npu_standin()
        try:
            report = activate(args.backend, disable=args.without_fix)
        except (ImportError, ValueError, RuntimeError) as err:
            print(f"npu_inductor_compat codegen: activation failed, nothing applied: {err}", file=sys.stderr)
            return 1
        import torch

        for note in _without_fix_notes(args.without_fix, report, torch.__version__):
            print(note, file=sys.stderr)
        progress.say(
            f"running {script} on the simulated NPU ({soc_name}; torch {torch.__version__}, {report['line']}, "
            f"backend {status()['backend']}, provider {args.provider})"
        )
        script_error = None
        script_imported_torch_npu = False
        header_failures = kernel_failures = 0
        torch._dynamo.reset()
        device.cpu_fallback_counts(reset=True)  # count what the script's run sends to the CPU, nothing before
        with (
            warnings.catch_warnings(),
            standin_context as standin,
            capturing(progress.graph, _codegen_settings(args.cpp_wrapper, args.dynamic)) as capture,
            _cuda_notes_dropped(),
            simulated_metadata(metadata),
            _script_argv(script, script_args),
        ):
            # our capture turns Inductor's caches off, and Dynamo says so once per run: not the script's business
            warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
            try:
                namespace = runpy.run_path(str(script), run_name="__main__")
                # the deep stand-in is imported by torch_npu's backend before the script runs, so the finder never
                # sees the script's own import: read it from the script's globals
                module = sys.modules.get("torch_npu")
                script_imported_torch_npu = module is not None and any(value is module for value in namespace.values())
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    script_error = {"type": "SystemExit", "message": str(exit_.code), "traceback": ""}
            except KeyboardInterrupt:
                raise
            except BaseException as err:  # the script's own failure is reported, not raised
                script_error = {"type": type(err).__name__, "message": str(err), "traceback": traceback.format_exc()}
            _end_a_forked_copy(output)
        torch._dynamo.reset()
        fallbacks_cpu = device.cpu_fallback_counts(reset=True)
        graphs = []
        by_kernel = events.by_kernel() if events is not None else {}
        for graph in capture.graphs:
            entry = graph.summary()
            entry["files"] = _write_graph(output, graph)
            if events is not None:  # what torch_npu's codegen did instead of its main path, per kernel
                entry["torch_npu_events"] = {name: by_kernel[name] for name in graph.kernels if name in by_kernel}
            graphs.append(entry)
            output.checkpoint()
        if script_error is not None:
            output.write("script_error.txt", script_error["traceback"])
        summary: dict[str, Any] = {
            "script": str(script),
            "argv": script_args,
            "torch": torch.__version__,
            "line": report["line"],
            "backend": status()["backend"],
            "soc": soc_name,
            "provider": args.provider,
            "provider_choice": args.provider_choice.to_json(),  # why that provider: the default, or --provider
            "cpp_wrapper": args.cpp_wrapper,
            "dynamic": any(graph["dynamic"] for graph in graphs),
            "dynamic_flag": args.dynamic,
            "without_fix": sorted(set(args.without_fix)),
            "kernel_metadata": metadata,
            "torch_npu_standin": {**standin.summary(), "imported": standin.imported or script_imported_torch_npu},
            "npu_options": device.simulated_options(),  # what the script set with torch.npu.set_option & co
            **({"torch_npu_wheel": events.summary()} if events is not None else {}),
            "fixes": {fix["id"]: fix["status"] for fix in status()["fixes"]},
            "script_error": None if script_error is None else {k: script_error[k] for k in ("type", "message")},
            "graphs": graphs,
            # aten operators with no npu kernel on the simulated NPU that ran on the CPU: calls per operator
            "cpu_fallback": dict(sorted(fallbacks_cpu.items(), key=lambda item: (-item[1], item[0]))),
        }
        if args.check_headers:
            with progress.muted():
                header_failures = _check_headers(output, summary, torch.__version__, progress)
        if args.check_kernels:
            from npu_inductor_compat.tools.simulated import kernel_check

            with progress.muted():
                kernel_failures = kernel_check.check(output.root, summary)
        from npu_inductor_compat.tools.simulated import static_check

        static_failures = static_check.check(output.read, summary)
        summary["files"] = sorted({*output.written, SUMMARY})
        output.write(SUMMARY, json.dumps(summary, indent=2) + "\n")
        refused = output.finish()
    finally:
        deactivate()
        run_stack.close()  # the provider choice, and for torch_npu-wheel the deep stand-in and its backend
        device.use_soc(previous_soc)
    out = output.root
    if not args.quiet:
        print(_table(summary))
        print(f"provider: {args.provider_choice.describe()}")
        print(f"wrote {out / SUMMARY}")
    for problem in refused:
        print(f"npu_inductor_compat codegen: not deleted: {problem}", file=sys.stderr)
    if script_error is not None:
        message = first_line(script_error["message"]) if script_error["message"] else ""
        print(
            f"the script raised {script_error['type']}: {message} (traceback: {out / 'script_error.txt'})",
            file=sys.stderr,
        )
    if summary["cpu_fallback"]:
        progress.say(_fallback_line(summary["cpu_fallback"]))
    nothing = _nothing_on_npu(summary)
    if nothing is not None and script_error is not None and not summary["graphs"]:
        # the script failed before compiling anything: that is the reason, not a missing torch.compile
        nothing = f"the script failed before compiling any graph ({_failed_where(script_error)})"
    if args.check_headers:
        check = summary.get("header_check", {})
        if check.get("error"):
            print(f"header check unavailable: {check['error']}", file=sys.stderr)
        elif header_failures:
            print(
                f"{header_failures} C++ wrapper(s) failed the header check (errors: header_check in summary.json)",
                file=sys.stderr,
            )
        elif not any(graph["wrapper"] == "cpp" and graph["files"]["wrapper"] for graph in summary["graphs"]):
            print("header check: no C++ wrapper was generated, so none was checked", file=sys.stderr)
        elif not args.quiet:
            print(f"every C++ wrapper compiles against torch's headers and {', '.join(check['headers'])}")
    if args.check_kernels:
        check = summary.get("kernel_check", {})
        if check.get("error"):
            print(f"kernel check: {check['error']}", file=sys.stderr)
        if check.get("triton_ascend") and not args.quiet:
            from npu_inductor_compat.tools.simulated.kernel_check import verdict as kernel_verdict

            verdict = kernel_verdict(check)
            print(
                f"triton-ascend {check['triton_ascend']} ({check['source']}): {check['configs']} kernel config(s) "
                f"to linalg in {check['seconds']} s: {verdict} (messages: kernel_check in summary.json)"
            )
    fallbacks = summary.get("torch_npu_wheel", {}).get("fallbacks", [])
    missing_stubs = summary["torch_npu_standin"].get("wheel", {}).get("missing_stubs", [])
    if fallbacks:
        print(
            f"torch_npu took {len(fallbacks)} fallback(s) from its main codegen path (per kernel: torch_npu_events "
            "in summary.json)",
            file=sys.stderr,
        )
    if missing_stubs:
        print(f"torch_npu reached native symbols with no stub: {', '.join(missing_stubs)}", file=sys.stderr)
    # torch_npu's TTIR check (run in a triton-ascend worker): a rejected kernel is one of the fallbacks above
    checks = summary.get("torch_npu_wheel", {}).get("checks", [])
    for result, said in (("failed", "rejected"), ("error", "could not check")):
        found = [check for check in checks if check["result"] == result]
        if found:
            lines = [line for line in found[0]["error"].splitlines() if line.strip()] or [""]
            # a compile error ends with the compiler's reason; a worker's error starts with what happened to it
            reason = lines[-1] if result == "failed" else lines[0]
            kernels = ", ".join(found[0]["kernels"]) or "(kernel unknown)"
            print(
                f"torch_npu's TTIR check {said} {len(found)} kernel(s), e.g. {kernels}: "
                f"{first_line(reason.strip(), 160)} (checks in summary.json)",
                file=sys.stderr,
            )
    for failure in static_failures:
        for problem in failure["problems"]:
            print(
                f"graph {failure['graph']}: {problem}: it cannot compile (static_check in summary.json)",
                file=sys.stderr,
            )
    failed = (args.check_headers and header_failures) or (args.check_kernels and kernel_failures)
    failed = failed or bool(fallbacks) or bool(missing_stubs) or bool(refused) or bool(static_failures)
    if nothing is not None:  # last: why the run proves nothing, after what the checks had to say
        print(f"npu_inductor_compat codegen: {nothing}", file=sys.stderr)
    return 1 if script_error is not None or capture.failed() or failed or nothing is not None else 0


def _fallback_line(counts: dict[str, int], shown: int = 5) -> str:
    """One line: how many calls of how many operators ran on the CPU, the most called first."""
    top = ", ".join(f"{name} {count}" for name, count in list(counts.items())[:shown])
    more = f", {len(counts) - shown} more" if len(counts) > shown else ""
    return (
        f"cpu fallback: {sum(counts.values())} call(s) of {len(counts)} operator(s) without an npu kernel ran on the "
        f"CPU: {top}{more} (all: cpu_fallback in summary.json)"
    )


def _check_headers(output: Output, summary: dict[str, Any], torch_version: str, progress: Progress) -> int:
    """Compile each graph's C++ (graph_<i>/wrapper.cpp) against torch's headers and every paired torch_npu
    release's; record the results in the summary; return how many graphs failed."""
    from npu_inductor_compat.tools.simulated import headers

    try:
        sources = headers.torch_npu_headers(torch_version)
    except headers.HeaderCheckUnavailable as err:
        summary["header_check"] = {"headers": [], "error": str(err)}
        return sum(1 for graph in summary["graphs"] if graph["wrapper"] == "cpp")
    summary["header_check"] = {"headers": [source.description for source in sources], "error": None}
    failures = 0
    wrappers = [graph for graph in summary["graphs"] if graph["wrapper"] == "cpp" and graph["files"]["wrapper"]]
    progress.say(
        f"checking {len(wrappers)} C++ wrapper(s) with g++ -fsyntax-only against torch's headers and "
        f"{', '.join(source.description for source in sources)} (a few seconds each)"
    )
    for graph in wrappers:
        cpp = output.root / graph["files"]["wrapper"]
        errors = []
        for source in sources:
            ok, compiler_output = headers.check(cpp, source)
            if not ok:
                errors.append(f"against {source.description}:\n{compiler_output[-4000:]}")
        graph["header_check"] = "ok" if not errors else "\n".join(errors)
        failures += bool(errors)
    return failures
