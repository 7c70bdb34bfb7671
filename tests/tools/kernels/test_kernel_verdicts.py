"""The kernel check's plan (each distinct source lowered once), its verdict cache and its progress lines, on real
files with results in the worker's form; the real worker and compiler: tests/tools/kernels/test_kernel_check.py."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.tools.simulated.kernels import kernel_verdicts as verdicts
from npu_inductor_compat.tools.simulated.kernels.kernel_plan import plan_check
from npu_inductor_compat.tools.simulated.kernels.kernel_progress import KernelProgress

pytestmark = pytest.mark.once  # nothing here depends on the torch line
CONTEXT = {"triton_ascend": ["3.2.0", "wheel"], "torch": "2.12.1", "torch_npu": None, "max_configs": None}


def kernels(folder: Path, **sources: str) -> list[Path]:
    paths = []
    for name, text in sources.items():
        path = folder / f"{name}.py"
        path.write_text(text)
        paths.append(path)
    return paths


def result(path: Path, number: int, ok: bool = True, **extra: Any) -> dict[str, Any]:
    """One config's result as the worker gives it (kernel_lowering.py)."""
    return {"file": str(path), "kernel": path.stem, "config": {"XBLOCK": 8 << number}, "stage": "linalg", "ok": ok,
            "error": None if ok else "linalg: rejected", "seconds": {"ttir": 0.1}, **extra}  # fmt: skip


def test_a_source_met_twice_is_lowered_once_and_every_file_gets_its_verdicts(tmp_path: Path) -> None:
    a, b, c = kernels(tmp_path, a="def k(): pass\n", b="def k(): pass\n", c="def other(): pass\n")
    plan = plan_check([a, b, c], CONTEXT, tmp_path / "cache")
    assert plan.to_lower == [a, c] and plan.duplicates == 1 and not plan.cached
    lowered = [result(a, 0), result(a, 1, ok=False), result(c, 0)]
    results = plan.finish(lowered, {str(a): (2, 2), str(c): (1, 1)}, {})
    assert [(Path(r["file"]).name, r["ok"]) for r in results] == [
        ("a.py", True), ("a.py", False), ("b.py", True), ("b.py", False), ("c.py", True)
    ]  # fmt: skip


def test_a_second_run_is_served_from_the_cache_and_another_context_is_not(tmp_path: Path) -> None:
    (a,) = kernels(tmp_path, a="def k(): pass\n")
    cache = tmp_path / "cache"
    first = plan_check([a], CONTEXT, cache)
    first.finish([result(a, 0), result(a, 1, ok=False)], {str(a): (3, 2)}, {"bridges": ["b"]})
    again = plan_check([a], CONTEXT, cache)
    assert again.to_lower == [] and len(again.cached) == 1
    environment: dict[str, Any] = {}
    results = again.finish([], {}, environment)
    assert environment == {"bridges": ["b"]}  # the worker's environment, as the run that lowered them had it
    assert [r["ok"] for r in results] == [True, False] and results[1]["error"] == "linalg: rejected"
    assert again.not_checked == 1  # the kernel has 3 configs, 2 were checked: said again from the cache
    for changed in ({"torch_npu": "2.9.1"}, {"max_configs": 1}, {"triton_ascend": ["3.2.1", "wheel"]}):
        assert plan_check([a], {**CONTEXT, **changed}, cache).to_lower == [a], changed
    assert plan_check([a], CONTEXT, None).to_lower == [a]  # --no-cache


@pytest.mark.parametrize("lost", ["lost", "incomplete", "no done event"])
def test_a_verdict_the_worker_did_not_finish_is_never_stored(tmp_path: Path, lost: str) -> None:
    (a,) = kernels(tmp_path, a="def k(): pass\n")
    cache = tmp_path / "cache"
    plan = plan_check([a], CONTEXT, cache)
    lowered = [result(a, 0), result(a, 1, ok=False, lost=True) if lost == "lost" else result(a, 1)]
    totals = {} if lost == "no done event" else {str(a): (2, 3 if lost == "incomplete" else 2)}
    plan.finish(lowered, totals, {})
    assert plan_check([a], CONTEXT, cache).to_lower == [a]


@pytest.mark.parametrize("damage", ["truncated", "edited", "other key", "link", "folder"])
def test_a_damaged_entry_is_recomputed_never_trusted(tmp_path: Path, damage: str) -> None:
    (a,) = kernels(tmp_path, a="def k(): pass\n")
    cache = tmp_path / "cache"
    plan = plan_check([a], CONTEXT, cache)
    plan.finish([result(a, 0)], {str(a): (1, 1)}, {})
    (entry,) = cache.glob("*.json")
    text = entry.read_text()
    if damage == "truncated":
        entry.write_text(text[: len(text) // 2])
    elif damage == "edited":
        entry.write_text(text.replace('"ok": true', '"ok": false'))
    elif damage == "other key":
        data = json.loads(text)
        data["key"] = "0" * 64
        entry.write_text(json.dumps(data))
    elif damage == "link":
        target = tmp_path / "elsewhere.json"
        target.write_text(text)
        entry.unlink()
        entry.symlink_to(target)
    else:
        entry.unlink()
        entry.mkdir()
    assert plan_check([a], CONTEXT, cache).to_lower == [a], damage


def test_storing_writes_a_whole_file_by_rename_and_replaces_a_link_never_through_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    key = "f" * 64
    (cache / f"{key}.json").symlink_to(victim)
    assert verdicts.store(cache, key, [{"config": {}, "ok": True}], 1, {})
    assert victim.read_text() == "the user's" and not (cache / f"{key}.json").is_symlink()
    assert verdicts.load(cache, key) == ([{"config": {}, "ok": True}], 1, {})
    assert [path.name for path in cache.iterdir()] == [f"{key}.json"]  # no temporary file left


def test_progress_says_kernels_configs_time_and_an_estimate_a_line_per_kernel_off_a_terminal() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = KernelProgress(4, stream, clock=lambda: now[0])
    for kernel in ("k0", "k1"):
        progress.line(json.dumps({"event": "start", "kernel": kernel, "file": f"{kernel}.py"}))
        for _ in range(3):
            progress.line(json.dumps({"event": "result", "key": "x"}))
        now[0] += 10.0
        progress.line(
            json.dumps({"event": "done", "kernel": kernel, "file": f"{kernel}.py", "configs": 3, "checked": 3})
        )
    again = {"event": "done", "kernel": "k1", "file": "k1.py", "configs": 3, "checked": 3}
    progress.line(json.dumps(again))  # a worker restarted after a hang says a finished file is done again
    progress.line("not json: a worker's stray line")
    progress.close()
    assert stream.getvalue().splitlines() == [
        "kernel check: 1/4 kernels, 3 configs, 10 s, about 30 s left; k0 done",
        "kernel check: 2/4 kernels, 6 configs, 20 s, about 20 s left; k1 done",
    ]
    assert progress.totals == {"k0.py": (3, 3), "k1.py": (3, 3)}


def test_the_cache_folder_follows_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(verdicts.CACHE_ENV, str(tmp_path / "v"))
    assert verdicts.cache_dir() == tmp_path / "v"
    monkeypatch.delenv(verdicts.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert verdicts.cache_dir() == tmp_path / "npu-inductor-compat" / "kernel_verdicts"
    assert os.sep in str(verdicts.cache_dir())


def test_sources_that_differ_only_in_the_order_of_a_mask_argument_are_one_kernel(tmp_path: Path) -> None:
    """torch_npu joins axis masks in set order, which string hashing varies between processes (two ResNet-18 runs on
    2.7.1.post11 differ there only): a whole-argument chain of masks is sorted for the key, nothing else is."""
    a, b, c = kernels(
        tmp_path,
        a="tl.store(out_ptr0 + (x2), tmp0, y1_mask & x2_mask & y0_mask)\n",
        b="tl.store(out_ptr0 + (x2), tmp0, x2_mask & y0_mask & y1_mask)\n",
        c="tl.store(out_ptr0 + (x2), tmp0, x2_mask & y0_mask)\n",
    )
    assert verdicts.source_digest(a) == verdicts.source_digest(b) != verdicts.source_digest(c)
    for text in ("tmp = ~y1_mask & x2_mask", "f(x + y1_mask & x2_mask)", "f(~y1_mask & x2_mask)"):
        assert verdicts.canonical(text) == text  # not a whole argument: an operator may bind tighter
    assert verdicts.canonical("tl.load(p, y1_mask & x2_mask, other=0.0)") == "tl.load(p, x2_mask & y1_mask, other=0.0)"
    # stock Inductor's names: xmask, r0_mask (torch 2.7.1 writes either order)
    assert verdicts.canonical("tl.load(p, xmask & r0_mask, other=0.0)") == "tl.load(p, r0_mask & xmask, other=0.0)"
