"""`codegen --provider torch_npu-wheel` of a script on this torch's paired torch_npu release, for the tests of
torch_npu's own codegen (reproducers and records): `import torch_npu_codegen_harness` in a test module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py
from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py

from npu_inductor_compat.tools.simulated.wheel import wheel_release
from npu_inductor_compat.tools.simulated.wheel.wheel_release import WheelUnavailable

BATCH_NORM = Path(__file__).resolve().parent.parent / "examples" / "torch_npu_batch_norm.py"
# The releases whose batch-norm kernels (two reduction axes) read loop_x0 and never open its loop (seen on each
# pair run here; the others generate them clean), without the record torch-npu-two-reduction-tiling
LOOP_X0_BROKEN = ("2.8.0.post5", "2.9.1", "2.11.0.post3", "2.12.0.post3")
EVERY_RELEASE = "NPU_INDUCTOR_COMPAT_EVERY_RELEASE"


class Run(NamedTuple):
    release: str
    returncode: int
    stderr: str
    summary: dict[str, Any]
    problems: list[str]  # the static check's


def paired_release(about: tuple[str, ...]) -> str:
    """This torch's torch_npu release; the test is skipped, saying why, without one, or when the release is not
    among ``about`` (the releases the test is about) unless EVERY_RELEASE is set (`nox -s torch_npu_wheel`)."""
    import torch

    try:
        release = wheel_release.paired_release(torch.__version__)
        wheel_release.unpacked(release)
    except WheelUnavailable as err:
        pytest.skip(f"no torch_npu release to run on this torch: {err}")
    if release not in about and not os.environ.get(EVERY_RELEASE):
        pytest.skip(f"the test is not about torch_npu {release} (set {EVERY_RELEASE}=1 to run it)")
    return release


def torch_npu_codegen(script: Path, out: Path, *flags: str) -> Any:
    """The command run into ``out``, in its parent folder. One string hash for every run: torch_npu joins some masks
    in set order, which would otherwise differ between two runs of one script."""
    seed = {"PYTHONHASHSEED": "0"}
    return run_codegen(script, "--quiet", *flags, out=out, provider="torch_npu-wheel", env=seed)


def codegen(script: Path, about: tuple[str, ...], out: Path, *flags: str, graphs: int = 2) -> Run:
    """The run on a release the test is about (else skipped), its ``graphs`` graphs compiled."""
    release = paired_release(about)
    done = torch_npu_codegen(script, out, *flags)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["script_error"] is None and summary["torch_npu_standin"]["wheel"]["torch_npu"] == release
    assert [graph["status"] for graph in summary["graphs"]] == ["ok"] * graphs, done.stderr[-3000:]
    problems = [problem for failure in summary["static_check"]["failures"] for problem in failure["problems"]]
    return Run(release, done.returncode, done.stderr, summary, problems)


def kernel_sources(out: Path, summary: dict[str, Any], graph: int) -> dict[str, str]:
    """Each kernel of graph ``graph`` of a run into ``out``, by name: its source as written."""
    kernels = summary["graphs"][graph]["files"]["kernels"]
    return {name: (out / entry["source"]).read_text() for name, entry in kernels.items()}


# ------------------------------------------------------------------------------ one kernel in Triton's interpreter
# The start of a child script that runs one generated kernel in Triton's interpreter (TRITON_INTERPRET=1, the real
# triton.language on CPU tensors): it reads [source, launch, configs] from stdin and defines them, ``kernel`` and
# ``launched(config, arguments)``; the test's own part follows and prints its JSON result as the last line.
INTERPRETER_PREAMBLE = r"""
import json, os, re, sys, types
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
from triton.runtime import interpreter

# Triton 3.4-3.6's interpreter turns a tensor into a Python index with int() of its 1-element array, which NumPy 2.4
# refuses (a kernel's `range(x0_offset, ...)`); 3.7 squeezes it first (runtime/interpreter.py _patch_lang_tensor):
# do as 3.7 does, where the older function is there.
patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
if patch_tensor is not None:
    def patched(tensor, *args):
        patch_tensor(tensor, *args)
        squeezed = lambda self: int(self.handle.data.squeeze())
        scope = args[0] if args else None
        if scope is not None:
            scope.set_attr(tensor, "__index__", squeezed)
        else:
            tensor.__index__ = squeezed
    interpreter._patch_lang_tensor = patched

# Triton 3.3's interpreter has no InterpreterBuilder.get_int1_ty, which torch 2.7.1's promote_to_tensor reaches
# (tl.zeros((1,), tl.int1)); later releases define it as tl.int1 (runtime/interpreter.py): add it as they do.
if not hasattr(interpreter.InterpreterBuilder, "get_int1_ty"):
    interpreter.InterpreterBuilder.get_int1_ty = lambda self: triton.language.int1

source, launch, configs = json.loads(sys.stdin.read())
body = source[source.index("@triton.jit"):]  # the kernel alone: no torch_npu heuristics or imports
module = types.ModuleType("kernel")
# the imports its body needs (torch-npu-looped-argreduce-index's kernels call this package's triton_argreduce)
exec("import triton\nimport triton.language as tl\nfrom torch._inductor.runtime import triton_helpers\n"
     "from npu_inductor_compat.common import triton_argreduce\n" + body, module.__dict__)


# The interpreter runs no libdevice extern (InterpreterBuilder.create_extern_elementwise raises NotImplementedError,
# runtime/interpreter.py), so a kernel's `libdevice.<f>` is looked up, when called, in triton.language.math, which it
# runs (rsqrt: create_rsqrt); a name that module lacks fails the launch, naming it.
class MathAsLibdevice:
    def __getattr__(self, name):
        return getattr(triton.language.math, name)


module.libdevice = MathAsLibdevice()
kernel = getattr(module, re.search(r"def (\w+)\(", body).group(1))
numels = dict(zip(launch["axes"], launch["numels"]))


def launched(config, arguments):
    # the kernel launched as the wrapper launches it, with the config's constexpr values; None, or the error's text
    constants = {key: value for key, value in config.items() if key in launch["constexprs"]}
    blocks = {key: config[key] for key in launch["runtime_blocks"]}  # 2.7.1.post11's line passes X0BLOCK at run time
    grid = tuple(triton.cdiv(numels[axis], config[block]) for axis, block in launch["grid"])
    try:
        kernel[grid](*arguments, *launch["numels"], **blocks, **constants)
    except Exception as err:
        return f"{type(err).__name__}: {err}"[:300]
    return None
"""


def launch_of(source: str, wrapper: str, name: str) -> dict[str, Any]:
    """How the wrapper launches kernel ``name``: its pointer parameters and the buffers passed to them (and their
    shapes), the numels and their axes, the constexpr parameters, and per grid dimension the axis and block it
    counts."""
    (arguments,) = re.findall(rf"\b{name}\.run\(([^)]*)\)", wrapper)
    values = [value.strip() for value in arguments.split(",") if "=" not in value]
    signature = re.search(r"def \w+\(([^)]*)\)", source)
    assert signature is not None
    params = [param.strip() for param in signature.group(1).split(",")]
    names = [param.split(":")[0].strip() for param in params]
    launch = {
        "params": [param for param in names if "ptr" in param],
        "pointers": [value for value in values if not value.isdigit()],
        "numels": [int(value) for value in values if value.isdigit()],
        "axes": [param[: -len("_numel")] for param in names if param.endswith("_numel")],
        "constexprs": [param for param, text in zip(names, params, strict=True) if "constexpr" in text],
        # the blocks passed as values, not constexprs (after the numels: no pointer, numel or constexpr)
        "runtime_blocks": [
            param
            for param, text in zip(names, params, strict=True)
            if "ptr" not in param and not param.endswith("_numel") and "constexpr" not in text
        ],
        # "<axis>_offset = tl.program_id(i) * <AXIS>BLOCK": the grid's dimension i counts that axis's blocks
        "grid": [
            (axis, block)
            for _, axis, block in sorted(
                (int(dim), axis, block)
                for axis, dim, block in re.findall(r"(\w+)_offset = tl\.program_id\((\d)\) \* (\w+)", source)
            )
        ],
    }
    assert len(launch["params"]) == len(launch["pointers"]), (launch, arguments)
    # each pointer's shape where the wrapper states it in numbers: a buffer it allocates, a graph input its benchmark
    # harness makes (rand_strided)
    shapes = {}
    for value in launch["pointers"]:
        found = re.search(rf"\b{value} = (?:rand_strided|empty_strided\w*)\(\(([^)]*)\)", wrapper)
        dims = [dim.strip() for dim in found.group(1).split(",") if dim.strip()] if found else []
        if dims and all(dim.isdigit() for dim in dims):
            shapes[value] = [int(dim) for dim in dims]
    launch["shapes"] = shapes
    return launch


def interpret(script: str, source: str, wrapper: str, name: str, configs: list[dict[str, Any]]) -> Any:
    """Kernel ``name`` of ``source`` run by INTERPRETER_PREAMBLE + ``script`` in a child; its last line, parsed."""
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETER_PREAMBLE + script],
        input=json.dumps([source, launch_of(source, wrapper, name), configs]),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
