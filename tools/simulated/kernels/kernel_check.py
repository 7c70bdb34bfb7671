"""``codegen --check-kernels``: every generated Triton kernel, per autotune config, through triton-ascend's compiler
front end (TTIR, its passes, linalg; npubin needs CANN) in worker processes (kernel_lowering.py), into summary.json.
How it runs, and torch_npu's kernels in their own environment: docs/codegen.md."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.kernels import kernel_verdicts as verdicts
from npu_inductor_compat.tools.simulated.kernels.kernel_plan import by_kernel_file, plan_check
from npu_inductor_compat.tools.simulated.kernels.kernel_progress import KernelProgress
from npu_inductor_compat.tools.simulated.kernels.kernel_stages import STAGES, config_time_records
from npu_inductor_compat.tools.simulated.kernels.kernel_workers import Run, budget_text, failure, serve
from npu_inductor_compat.tools.simulated.kernels.triton_ascend_site import (
    KernelCheckUnavailable,
    TritonAscend,
    confine_triton,
    locate,
    worker_env,
)

WORKER = ("-m", "npu_inductor_compat.tools.simulated.kernels.kernel_lowering", "--worker")  # after sys.executable
LIBDEVICE = "tl.extra.ascend.libdevice (torch_npu's npu_triton_helpers binding)"
# torch_npu's kernels: their own imports bind libdevice (torch_npu/_inductor/runtime/triton_helpers.py)
TORCH_NPU_LIBDEVICE = "torch_npu's triton_helpers binding (tl.extra.cann.libdevice, else tl.extra.ascend.libdevice)"
TORCH_NPU_TTIR = (
    "torch_npu's NPUCachingAutotuner._precompile_config (its source, target and options, as on an NPU), up to "
    "triton.compile"
)


def kernel_files(out: Path, summary: dict[str, Any]) -> list[tuple[int, str, Path]]:
    """(graph index, kernel name, file) of every Triton kernel the codegen run wrote, from the summary's file index
    (a graph may also hold C++ kernels for CPU tensors, e.g. an optimizer's step counts: triton-ascend never sees
    those)."""
    found = []
    for graph in summary["graphs"]:
        for name, entry in graph["files"]["kernels"].items():
            if entry["defined_with"] == "triton" and entry["source"] is not None:
                found.append((graph["index"], name, out / entry["source"]))
    return found


KERNELS_PER_WORKER = 4  # the fewest distinct kernels a default worker gets (-j sets the count outright)
START_LIMIT = 900.0  # a worker's start-up (torch, torch_npu's backend, triton-ascend): charged to no kernel
STAGE_LIMIT = 900.0  # one stage of one config without progress: hung


def lower(
    files: list[Path],
    triton_ascend: TritonAscend,
    timeout: float = STAGE_LIMIT,
    torch_npu: str | None = None,
    environment: dict[str, Any] | None = None,
    records: tuple[str, ...] = (),
    budget: float | None = None,
    on_line: Callable[[str], None] | None = None,
    max_configs: int | None = None,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """One result per (kernel file, config): ``file``, ``config``, ``stage`` reached (None, or one of STAGES),
    ``ok`` (reached linalg, or the last stage before CANN its pipeline has: ``note`` says so), ``error`` (the
    compiler's message), ``seconds`` per stage. A stage of one config that runs ``timeout`` seconds is hung: that
    config is recorded so, the rest go on in a new worker. ``budget``: seconds for the whole check; when it runs
    out the config in work is recorded as stopped and every file not reached as unchecked (``unchecked``: True).
    ``torch_npu``: the release whose kernels they are (loaded in torch_npu_bridges.py's ``torch_npu_environment``;
    what it unstubbed and bridged goes into ``environment``); ``records``: ids of config_time_records() the worker
    applies; ``on_line``: each line the worker prints, as it comes; ``max_configs``: each kernel's first configs
    only; ``workers``: how many lower at once, each taking the next file when done (kernel_workers.py). A result the
    worker did not give itself (a hang, a death, the budget) has ``lost``: True."""
    env = worker_env(triton_ascend)
    options = [f"--records={','.join(records)}"] if records else []
    options += [f"--max-configs={max_configs}"] if max_configs else []
    with tempfile.TemporaryDirectory(prefix="npu_kernel_check_cache_") as cache:
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", cache)  # what the worker's Inductor writes goes with it
        confine_triton(env, cache)
        args = (timeout, torch_npu, environment, tuple(options), budget)
        return _lower(files, env, *args, on_line=on_line, workers=workers)


def _lower(
    files: list[Path],
    env: dict[str, str],
    timeout: float,
    torch_npu: str | None,
    environment: dict[str, Any] | None,
    options: tuple[str, ...] = (),
    budget: float | None = None,
    start_limit: float = START_LIMIT,
    on_line: Callable[[str], None] | None = None,
    workers: int = 1,
) -> list[dict[str, Any]]:
    command = [sys.executable, *WORKER, *([f"--torch-npu={torch_npu}"] if torch_npu else []), *options]
    run = Run(command, env, timeout, start_limit, budget, on_line, environment)
    for path in files:
        run.files.put(path)
    slots = [threading.Thread(target=_slot, args=(run,), daemon=True) for _ in range(max(1, workers))]
    for slot in slots:
        slot.start()
    for slot in slots:
        slot.join()
    run.close()
    if run.out_of_budget():
        reached = {result.get("file") for result in run.results}
        why = f"not checked: {budget_text(run)}"
        for path in files:
            if str(path) not in reached:
                run.record({**failure(why, str(path)), "seconds": {}, "unchecked": True})
    return run.results


def _slot(run: Run) -> None:
    try:
        serve(run)
    except Exception as err:  # a fault of ours: the rest of the check goes on in the other slots
        run.record(failure(repr(err)))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check(
    out: Path,
    summary: dict[str, Any],
    stage_limit: float = STAGE_LIMIT,
    budget: float | None = None,
    jobs: int | None = None,
    max_configs: int | None = None,
    cache: bool = True,
) -> int:
    """Lower every kernel the codegen run wrote, each distinct source once (kernel_verdicts.py: from the verdict
    cache unless ``cache`` is False), in up to ``jobs`` workers (default: the cores available, KERNELS_PER_WORKER
    kernels each at least); record the results in the summary; return the rejected configs (those the budget left
    unchecked count too)."""
    try:
        triton_ascend = locate()
    except KernelCheckUnavailable as err:
        summary["kernel_check"] = {"triton_ascend": None, "error": str(err)}
        return sum(len(graph["kernels"]) for graph in summary["graphs"]) or 1
    files = kernel_files(out, summary)
    # the torch_npu-wheel provider's kernels load in torch_npu's environment, in its release
    torch_npu = (summary.get("torch_npu_standin") or {}).get("wheel", {}).get("torch_npu")
    fixes = summary.get("fixes") or {}
    records = tuple(key for key in config_time_records() if torch_npu is not None and fixes.get(key) == "applied")
    context = {
        "triton_ascend": [triton_ascend.version, str(triton_ascend.source)],
        "torch": summary.get("torch"),
        "torch_npu": torch_npu,
        "records": list(records),
        "max_configs": max_configs,
        "stages": list(STAGES),
    }
    start = time.perf_counter()
    plan = plan_check([path for _, _, path in files], context, verdicts.cache_dir() if cache else None)
    environment: dict[str, Any] = {}
    # by default a worker per core, each with a few kernels at least: a worker's start-up (torch, triton-ascend)
    # costs as much as lowering a few kernels
    workers = max(1, min(jobs or available_cores(), len(plan.to_lower) // (1 if jobs else KERNELS_PER_WORKER)))
    if files:
        print(
            f"lowering {len(files)} Triton kernel(s) ({len(plan.to_lower)} to lower: "
            f"{len(plan.cached)} from the verdict cache, {plan.duplicates} duplicate(s)), "
            f"{'every autotune config' if max_configs is None else f'the first {max_configs} config(s) of each'}, "
            f"through triton-ascend {triton_ascend.version}'s front end (TTIR, then linalg) in {workers} worker(s) ...",
            file=sys.stderr,
            flush=True,
        )
    progress = KernelProgress(len(plan.to_lower))
    args = (triton_ascend, stage_limit, torch_npu, environment, records, budget, progress.line, max_configs)
    lowered = lower(plan.to_lower, *args, workers=workers) if plan.to_lower else []
    progress.close()
    results = plan.finish(lowered, progress.totals, environment)
    by_file, orphans = by_kernel_file(results)
    rejected = len(orphans) + sum(1 for result in results if result.get("file") and not result["ok"])
    for graph in summary["graphs"]:
        graph["kernel_check"] = {
            name: [
                {key: result.get(key) for key in ("config", "stage", "ok", "error", "seconds", "note", "unchecked")}
                for result in by_file.get(str(path), [])
            ]
            for index, name, path in files
            if index == graph["index"]
        }
    every, some = rejected_kernels(summary["graphs"])
    summary["kernel_check"] = {
        "every_config_rejected": every,
        "some_configs_rejected": some,
        "triton_ascend": triton_ascend.version,
        "source": triton_ascend.source,
        "stages": list(STAGES),
        "libdevice": LIBDEVICE if torch_npu is None else TORCH_NPU_LIBDEVICE,
        **({} if torch_npu is None else {"torch_npu": torch_npu, "ttir": TORCH_NPU_TTIR, **environment}),
        **({"records": list(records)} if records else {}),
        "configs": len(results),
        "lowered": len([result for result in lowered if result.get("file") is not None and not result.get("lost")]),
        "kernels": {"files": len(files), "lowered": len(plan.to_lower), "from_cache": len(plan.cached)},
        "duplicates": plan.duplicates,
        "workers": workers,
        "verdict_cache": None if not cache else str(verdicts.cache_dir()),
        **({"max_configs": max_configs, "not_checked": plan.not_checked} if max_configs is not None else {}),
        "rejected": rejected,
        "unchecked": sorted({str(result["file"]) for result in results if result.get("unchecked")}),
        **({"stage_limit": stage_limit} if stage_limit != STAGE_LIMIT else {}),
        **({"budget": budget} if budget is not None else {}),
        "seconds": round(time.perf_counter() - start, 1),
        "error": "\n".join(result["error"] for result in orphans) or None,
    }
    return rejected


def rejected_kernels(graphs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(kernels with every config rejected: they cannot compile at all, kernels with only some configs rejected:
    the autotuner loses choices), each as "graph N: name", from the per-graph kernel_check results."""
    every: list[str] = []
    some: list[str] = []
    for graph in graphs:
        for name, results in (graph.get("kernel_check") or {}).items():
            failed = [result for result in results if not result["ok"]]
            if failed:
                (every if len(failed) == len(results) else some).append(f"graph {graph['index']}: {name}")
    return every, some


def verdict(check: dict[str, Any]) -> str:
    """One clause for the run's last lines: every config lowered, or which kernels cannot compile at all apart from
    those that only lose configs."""
    if not check.get("rejected"):
        return "every kernel config lowered" if check.get("configs") else "no Triton kernel to lower"
    every, some = check.get("every_config_rejected", []), check.get("some_configs_rejected", [])
    parts = [f"{check['rejected']} config(s) rejected"]
    if check.get("unchecked"):
        parts.append(f"the budget ran out: {len(check['unchecked'])} kernel file(s) not fully checked")
    if every:
        parts.append(
            f"{len(every)} kernel(s) with every config rejected, which cannot compile at all ({', '.join(every)})"
        )
    if some:
        parts.append(f"{len(some)} kernel(s) with some configs rejected")
    return "; ".join(parts)
