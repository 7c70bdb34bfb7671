"""What `codegen --check-kernels` costs for a real model with a cold and a warm verdict cache (prints figures;
asserts nothing). Run: python tests/benchmarks/bench_check_cache.py [resnet18|convnext_tiny] [-j N] [--budget S]"""

# Each model runs twice into fresh output folders with one fresh verdict cache (NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS),
# with the line's default provider (torch_npu's own codegen where a release is paired, e.g. 2.7.1.post11 on 2.7.1).
# Printed per run: wall time, the kernel check's own seconds, kernels (files, lowered, from the cache, duplicates),
# configs (all, lowered now) and the summed seconds of each compiler stage: where the rest of the time goes.

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # the tests' one codegen harness, as conftest.py loads it
from npu_compat_test_codegen import run_codegen  # noqa: E402

EXAMPLES = TESTS.parent / "examples"
CONVNEXT = """
import torch
import torch_npu  # noqa: F401
import torchvision

torch.manual_seed(0)
model = torchvision.models.convnext_tiny(weights=None, num_classes=10).npu()
loss = torch.compile(model)(torch.randn(2, 3, 64, 64).npu()).sum()
loss.backward()
"""


def run(script: Path, out: Path, cache: Path, flags: list[str]) -> tuple[float, dict]:
    env = {"NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS": str(cache)}
    start = time.perf_counter()
    done = run_codegen(script, "--check-kernels", "--quiet", *flags, out=out, provider=None, env=env)
    if done.summary is None:
        raise SystemExit(f"codegen wrote no summary (exit {done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start, done.summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", nargs="?", default="resnet18", choices=("resnet18", "convnext_tiny"))
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--budget", type=float, default=None, help="--check-budget for each run")
    args = parser.parse_args()
    flags = ["-j", str(args.jobs)] if args.jobs else []
    flags += ["--check-budget", str(args.budget)] if args.budget else []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        script = EXAMPLES / "models" / "resnet18.py"
        if args.model == "convnext_tiny":
            script = root / "convnext_tiny.py"
            script.write_text(CONVNEXT)
        for run_name in ("cold", "warm"):
            seconds, summary = run(script, root / run_name, root / "verdicts", flags)
            check = summary.get("kernel_check") or {}
            if not check.get("triton_ascend"):
                print(f"{run_name}: no kernel check ({check.get('error') or summary.get('script_error')})")
                return
            stages: dict[str, float] = {}
            for graph in summary["graphs"]:
                for results in graph.get("kernel_check", {}).values():
                    for result in results:
                        for stage, spent in (result.get("seconds") or {}).items():
                            stages[stage] = stages.get(stage, 0.0) + spent
            provider = (summary.get("torch_npu_standin") or {}).get("wheel", {}).get("torch_npu") or "stock"
            print(
                f"{args.model} {run_name} (torch {summary['torch']}, {provider}, {check['workers']} worker(s)): "
                f"{seconds:.0f} s wall, check {check['seconds']} s; kernels {check['kernels']}, "
                f"{check['duplicates']} duplicate(s); configs {check['configs']}, {check['lowered']} lowered now, "
                f"{check['rejected']} rejected, {len(check.get('unchecked') or [])} file(s) unchecked"
            )
            if stages and check["lowered"]:
                spent = ", ".join(f"{stage} {total:.0f} s" for stage, total in stages.items())
                print(f"  compiler stages summed over the configs lowered (across workers): {spent}")


if __name__ == "__main__":
    main()
