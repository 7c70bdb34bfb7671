"""The kernel corpus: real model scripts (``examples/corpus/``) through ``codegen --check-kernels``, per torch line."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.codegen.codegen_report import first_line

START, END = "<!-- kernel-corpus:start -->", "<!-- kernel-corpus:end -->"


def _first_line(message: str) -> str:
    """The line of a compiler message that says what went wrong (an assertion, an error), not the tool's banner."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if "Assertion" in line or "error" in line.lower() or "unsupported" in line or "attribute" in line:
            return first_line(line, 240)
    return first_line(lines[0], 240) if lines else ""


def run_script(
    script: Path, out: Path, provider: str | None = None, options: Sequence[str] = (), timeout: float = 1800
) -> dict[str, Any]:
    """codegen --check-kernels of ``script`` into ``out``, with ``provider`` (None: codegen's default) and any other
    codegen ``options`` (``--execute``, ``--cpp-wrapper``, ``--max-configs N``)."""
    command = [sys.executable, "-m", "npu_inductor_compat", "codegen", str(script), "--check-kernels", "--out"]
    command += [str(out), *(("--provider", provider) if provider is not None else ()), *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        return {"script": script.name, "error": f"codegen exited {done.returncode}: {done.stderr.strip()[-400:]}"}
    summary = json.loads(summary_path.read_text())
    check = summary.get("kernel_check") or {}
    results = [
        (name, result)
        for graph in summary["graphs"]
        for name, results in (graph.get("kernel_check") or {}).items()
        for result in results
    ]
    return {
        "script": script.name,
        "torch": summary["torch"],
        "provider": summary.get("provider"),  # who generated the kernels (codegen --provider)
        "exit": done.returncode,
        "imported_torch_npu": bool((summary.get("torch_npu_standin") or {}).get("imported")),
        "triton_ascend": check.get("triton_ascend"),
        "graphs": len(summary["graphs"]),
        "kernels": sum(len(graph.get("kernel_check") or {}) for graph in summary["graphs"]),
        "configs": len(results),
        "rejected": [
            {
                "kernel": name,
                "config": result["config"],
                "stage": result["stage"],
                "message": _first_line(result["error"] or ""),
            }
            for name, result in results
            if not result["ok"]
        ],
        "error": (summary.get("script_error") or {}).get("message") or check.get("error"),
        "cpp_wrapper": bool(summary.get("cpp_wrapper")),
        "execution": summary.get("execution"),  # codegen --execute: graphs per verdict, seconds
    }


# The table compares stock Inductor's kernels across torch lines: on a torch with a torch_npu pair codegen's default
# would be torch_npu's own codegen (`run --provider torch_npu-wheel` gives that)
PROVIDER = "stock"


def run(corpus: Path, provider: str = PROVIDER) -> dict[str, Any]:
    """Codegens each script of ``corpus`` on the simulated NPU and lowers every kernel config through triton-ascend's
    front end; what happened, as JSON (per script: graphs, kernels, configs, rejections with the compiler's first
    line, the script's own error)."""
    scripts = sorted(corpus.glob("*.py"))
    with tempfile.TemporaryDirectory() as scratch:
        entries = [run_script(script, Path(scratch) / script.stem, provider) for script in scripts]
    import importlib.metadata

    torch = importlib.metadata.version("torch").split("+")[0]
    ran = sorted({entry["provider"] for entry in entries if entry.get("provider")})
    return {"torch": torch, "provider": ", ".join(ran) or provider, "scripts": entries}


def _provider(result: dict[str, Any]) -> str:
    return str(result.get("provider") or PROVIDER)  # JSON written before the field: stock Inductor's


def cell(entry: dict[str, Any]) -> str:
    if entry.get("error") and not entry.get("configs"):
        return f"error: {entry['error'].splitlines()[0][:80]}"
    accepted = entry["configs"] - len(entry["rejected"])
    kernels = entry["kernels"]
    text = f"{kernels} kernel{'' if kernels == 1 else 's'}, {accepted}/{entry['configs']} configs"
    if entry.get("error"):
        text += " (script error)"
    return text


def row(results: dict[str, Any]) -> dict[str, str]:
    """What the table says for one torch line: script -> cell (what a test compares with the table for the line it
    runs on)."""
    return {entry["script"]: cell(entry) for entry in results["scripts"]}


def render(all_results: list[dict[str, Any]]) -> str:
    """The JSON of several torch lines as docs/codegen.md's corpus table (``nox -s kernels`` runs ``run``, then
    this)."""
    lines_ = sorted(all_results, key=lambda result: tuple(int(p) for p in result["torch"].split(".")[:3]))
    scripts = sorted({entry["script"] for result in lines_ for entry in result["scripts"]})
    versions = sorted({entry.get("triton_ascend") for r in lines_ for entry in r["scripts"]} - {None})
    providers = sorted({_provider(result) for result in lines_})
    one = len(providers) == 1  # one provider: said once; several: in each column's header
    column = [f"torch {result['torch']}" + ("" if one else f" ({_provider(result)})") for result in lines_]
    header = "| script | " + " | ".join(column) + " |"
    by = f"`codegen --provider {providers[0]}`" if one else "the provider in each column's header"
    out = [
        f"Kernels and autotune configs triton-ascend {', '.join(versions) or '?'} lowers to linalg, per torch line, "
        f"generated by {by} (`nox -s kernels`):",
        "",
        header,
        "|---" * (len(lines_) + 1) + "|",
    ]
    cells = [row(result) for result in lines_]
    for script in scripts:
        out.append(f"| `{script}` | " + " | ".join(found.get(script, "-") for found in cells) + " |")
    rejections = []
    for result in lines_:
        for entry in result["scripts"]:
            for rejected in entry["rejected"]:
                config = ", ".join(f"{key}={value}" for key, value in (rejected["config"] or {}).items())
                rejections.append(
                    f"- torch {result['torch']}, `{entry['script']}`: `{rejected['kernel']}` ({config or 'no config'})"
                    f" at {rejected['stage'] or 'load'}: `{rejected['message']}`"
                )
    out += ["", "Rejected:" if rejections else "Rejected: none.", *rejections]
    return "\n".join(out)


def replace_in_readme(readme: Path, table: str) -> None:
    text = readme.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{readme} has no {START} ... {END} block")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    readme.write_text(f"{head}{START}\n{table}\n{END}{tail}")


def table_in_readme(readme: Path) -> dict[str, dict[str, str]]:
    """torch version -> script -> cell, as the corpus table in ``readme`` (docs/codegen.md) says."""
    text = readme.read_text()
    block = text.split(START, 1)[1].split(END, 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    header = [part.strip() for part in rows[0].strip("|").split("|")]
    versions = [name.removeprefix("torch ").split(" (")[0] for name in header[1:]]
    table: dict[str, dict[str, str]] = {version: {} for version in versions}
    for line in rows[1:]:
        parts = [part.strip() for part in line.strip("|").split("|")]
        for version, value in zip(versions, parts[1:], strict=True):
            if value != "-":
                table[version][parts[0].strip("`")] = value
    return table


def main(argv: list[str] | None = None) -> int:
    """``run`` writes the JSON, ``render`` the table into the readme:

    - ``python -m npu_inductor_compat.tools.simulated.kernels.corpus run CORPUS_DIR --out kernels-2.12.1.json
      [--provider NAME]``
    - ``python -m npu_inductor_compat.tools.simulated.kernels.corpus render kernels-*.json --readme docs/codegen.md``
    """
    parser = argparse.ArgumentParser(prog="python -m npu_inductor_compat.tools.simulated.kernels.corpus")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="codegen --check-kernels every script of CORPUS_DIR on this torch")
    run_parser.add_argument("corpus", type=Path)
    run_parser.add_argument("--out", type=Path, required=True)
    run_parser.add_argument("--provider", default=PROVIDER, help="codegen's --provider (default: %(default)s)")
    render_parser = sub.add_parser("render", help="the corpus table (docs/codegen.md) from several lines' JSON")
    render_parser.add_argument("results", nargs="+", type=Path)
    render_parser.add_argument("--readme", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "run":
        results = run(args.corpus, args.provider)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(render([results]))
        broken = [entry["script"] for entry in results["scripts"] if entry.get("error") and not entry.get("configs")]
        if broken:
            print(f"no kernels checked for {', '.join(broken)} (errors in {args.out})", file=sys.stderr)
        return 1 if broken else 0
    replace_in_readme(args.readme, render([json.loads(path.read_text()) for path in args.results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
