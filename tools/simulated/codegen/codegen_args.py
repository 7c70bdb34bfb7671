"""`codegen`'s command line: the parser, --kernel-metadata's fields, and the checks made before the script runs
(each bad flag is a usage error, exit 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from npu_inductor_compat.common.device import kernel_metadata
from npu_inductor_compat.tools.simulated.codegen.output import Output, UsageError, prepare_output

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
    from npu_inductor_compat.tools.simulated.npu.soc import DEFAULT_SOC, SOCS

    parser.add_argument(
        "--soc",
        default=None,
        metavar="NAME",
        help=f"the Ascend SoC the simulated NPU reports (default {DEFAULT_SOC}; one of {', '.join(SOCS)})",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines and no table (errors still go to stderr)"
    )
    from npu_inductor_compat.tools.simulated.codegen import provider_choice

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
    parser.add_argument(
        "--execute",
        action="store_true",
        help="also run what Inductor generated, the first time the script calls each graph: the Python wrapper as "
        "written, every Triton kernel in Triton's interpreter once per autotune config, externs on the CPU; every "
        "output and mutated input compared with the eager run (values RNG made are not compared). A mismatch or an "
        "error exits 1, naming graph, kernel and config. With --cpp-wrapper, the C++ wrapper is built against an "
        "emulated NPU runtime and called, each kernel run from its packed arguments",
    )
    parser.add_argument(
        "--stage-limit",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --check-kernels: a stage of one config that makes no progress this long is hung and stopped, "
        "naming its kernel (default 900; a worker's start-up is not charged to it)",
    )
    parser.add_argument(
        "--check-budget",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --check-kernels: the whole check's time; when it runs out, the config in work is stopped and "
        "every kernel not reached is listed as unchecked (the run then exits 1)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_count,
        default=None,
        metavar="N",
        help="with --check-kernels: worker processes lowering kernels at once (default: the cores available)",
    )
    parser.add_argument(
        "--max-configs",
        type=_count,
        default=None,
        metavar="N",
        help="with --check-kernels or --execute: only each kernel's first N configs, in the order its heuristics "
        "list them (default: every config); the summary counts the configs not checked or not run",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="with --check-kernels: lower every kernel again, neither reading nor writing the verdict cache "
        "($NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS, else kernel_verdicts/ in the tool's cache folder)",
    )
    return parser


N = TypeVar("N", int, float)


def number_argument(
    parse: Callable[[str], N], valid: Callable[[N], bool], unparsable: str, invalid: str
) -> Callable[[str], N]:
    """An argparse ``type``: ``parse(text)``, refused with ``unparsable`` when it cannot, with ``invalid`` when the
    value is not ``valid`` (both formatted with ``text``, its repr, and ``value``)."""

    def convert(text: str) -> N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(unparsable.format(text=repr(text))) from None
        if not valid(value):
            raise argparse.ArgumentTypeError(invalid.format(text=repr(text), value=value))
        return value

    return convert


_count = number_argument(int, lambda value: value >= 1, "{text} is not a whole number", "{text} must be 1 or more")
_seconds = number_argument(
    float, lambda value: value > 0, "{text} is not a number of seconds", "{text} must be a positive number of seconds"
)


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
    from npu_inductor_compat.common.device.kernel_metadata import read_launch_metadata

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


def split_script_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(codegen's own arguments, the script's arguments): everything after the first ``--`` is the script's."""
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


@dataclass
class Invocation:
    """A checked command line: what the run needs (``args.provider`` is the chosen provider, and
    ``args.provider_choice`` why), with --out prepared and locked."""

    args: argparse.Namespace
    script: Path
    script_args: list[str]
    soc: str
    metadata: dict[str, Any]
    output: Output


def parse(argv: Sequence[str]) -> Invocation:
    """codegen's arguments (and the script's, after ``--``) checked before anything runs; a usage error exits 2."""
    parser = build_parser()
    own_args, script_args = split_script_args(argv)
    args = parser.parse_args(own_args)
    script = Path(args.script)
    if not script.is_file():
        parser.error(f"SCRIPT {args.script!r} is not a file")
    from npu_inductor_compat.common.composition import backend_table

    if args.backend is not None:
        try:
            backend_table.normalise(args.backend, "--backend")
        except ValueError as err:
            parser.error(str(err))
    from npu_inductor_compat.tools.simulated.npu import soc

    try:
        chosen_soc = soc.get_soc(args.soc if args.soc is not None else soc.DEFAULT_SOC)
    except ValueError as err:
        parser.error(f"--soc: {err}")
    metadata = _kernel_metadata(parser, args)
    _choose_provider(parser, args)
    known = _fix_ids(args.provider_choice)
    unknown = sorted(set(args.without_fix) - known)
    if unknown:
        parser.error(f"--without-fix: unknown id(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    try:
        output = prepare_output(Path(args.out), args.force)
    except UsageError as err:
        parser.error(str(err))
    return Invocation(args, script, script_args, chosen_soc.name, metadata, output)


def _kernel_metadata(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """--kernel-metadata's fields ({} without it); it and --check-headers need --cpp-wrapper."""
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
    for flag, given in (
        ("--stage-limit", args.stage_limit),
        ("--check-budget", args.check_budget),
        ("--jobs", args.jobs),
        ("--no-cache", args.no_cache or None),
    ):
        if given is not None and not args.check_kernels:
            parser.error(f"{flag} concerns the kernel check: add --check-kernels")
    if args.max_configs is not None and not (args.check_kernels or args.execute):
        parser.error("--max-configs concerns the kernel check and --execute: add --check-kernels or --execute")
    return metadata


def _choose_provider(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--provider, or the default on this torch, into ``args.provider`` and ``args.provider_choice``."""
    from npu_inductor_compat.tools.simulated.codegen import provider_choice
    from npu_inductor_compat.version import installed_torch

    try:
        choice = provider_choice.choose(installed_torch().text, args.provider)
    except provider_choice.ProviderUnavailable as err:
        parser.error(f"--provider {args.provider}: {err}")
    args.provider, args.provider_choice = choice.provider, choice


def _fix_ids(choice: Any) -> set[str]:
    """Every id --without-fix may name: the fixes, the line's layers and the chosen provider's records."""
    from npu_inductor_compat.common.composition import layers
    from npu_inductor_compat.dispatch import resolve
    from npu_inductor_compat.registry import fix_records
    from npu_inductor_compat.tools.simulated.npu import device

    known = {record.id for record in fix_records()} | set(layers.all_layer_ids(resolve()[1].adapters))
    known |= {record.id for record in device.PROVIDER.records()}
    if choice.release is not None:
        from npu_inductor_compat.tools.simulated.kernels.ttir_check import TtirCheckWorker
        from npu_inductor_compat.tools.simulated.wheel import torch_npu_wheel

        # its records depend on the release (wheel_targets.RELEASES); its backend loading is not offered
        known |= {
            record.id for record in torch_npu_wheel.provider(release=choice.release, checker=TtirCheckWorker).records()
        }
    return known
