"""Hostile --out folders for codegen (issue #27): nothing outside --out is read, written or deleted, the manifest
lists every file on disk whenever a run stops, one run writes a folder at a time, and caches hide no graph."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_codegen import (  # tests/npu_compat_test_codegen.py, loaded by conftest.py
    codegen_command,
    run_codegen,
)
from npu_compat_test_env import child_env  # tests/npu_compat_test_env.py, loaded by conftest.py

from npu_inductor_compat.tools.simulated.codegen import output as output_module
from npu_inductor_compat.tools.simulated.codegen.output import (
    MANIFEST,
    MANIFEST_TOOL,
    Output,
    Refused,
    UsageError,
    prepare_output,
)


def manifest(out: Path, files: Any, **fields: Any) -> None:
    out.mkdir(exist_ok=True)
    (out / MANIFEST).write_text(json.dumps({"tool": MANIFEST_TOOL, "version": 1, "files": files, **fields}))


def listed(out: Path) -> list[str]:
    return list(json.loads((out / MANIFEST).read_text())["files"])


def on_disk(out: Path) -> set[str]:
    """Every file under out but codegen's own bookkeeping (the manifest, its partial copy, the lock)."""
    found = {str(path.relative_to(out)) for path in out.rglob("*") if path.is_file() or path.is_symlink()}
    return found - output_module.OWN


@pytest.fixture
def take() -> Iterator[Callable[..., Output]]:
    """prepare_output, each Output released after the test."""
    taken: list[Output] = []

    def prepare(out: Path, force: bool = False) -> Output:
        taken.append(prepare_output(out, force))
        return taken[-1]

    yield prepare
    for output in taken:
        output.release()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "victim.txt").write_text("not codegen's\n")
    (folder / "sub" / "x").write_text("not codegen's either\n")
    return folder


# Deleting outside


@pytest.mark.parametrize("entry", ["link/victim.txt", "link/sub/x"])
def test_an_entry_through_a_symlinked_folder_is_refused_naming_it(
    entry: str, tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, [entry, "summary.json"])
    (out / "link").symlink_to(outside)
    with pytest.raises(UsageError, match=f"'{entry}': 'link' in --out is a symlink"):
        take(out)
    output = take(out, force=True)  # --force: the manifest is not trusted, nothing is deleted
    output.write("summary.json", "{}\n")
    assert output.finish() == []
    assert (outside / "victim.txt").read_text() == "not codegen's\n"
    assert (outside / "sub" / "x").read_text() == "not codegen's either\n"


def test_a_folder_turned_into_a_link_during_the_run_is_not_deleted_through(
    tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, ["graph_0/victim.txt", "graph_1/sub/x"])
    (out / "graph_0").mkdir()
    output = take(out)
    (out / "graph_0").rmdir()  # the script swaps the folder for a link while it runs
    (out / "graph_0").symlink_to(outside)
    (out / "graph_1").symlink_to(outside)
    refused = output.finish()
    assert len(refused) == 2 and "'graph_0/victim.txt': 'graph_0' in --out is a symlink" in refused[0]
    assert (outside / "victim.txt").is_file() and (outside / "sub" / "x").is_file()


# Writing outside


@pytest.mark.parametrize("name", ["summary.json", ".codegen_manifest.json.partial"])
def test_a_symlinked_file_in_out_is_replaced_not_written_through(
    name: str, tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, ["summary.json"])
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(outside / "victim.txt")
    output = take(out)
    output.write("summary.json", "new\n")
    output.finish()
    assert (outside / "victim.txt").read_text() == "not codegen's\n"
    assert (out / "summary.json").read_text() == "new\n" and not (out / "summary.json").is_symlink()
    assert listed(out) == ["summary.json"]


def test_a_symlinked_manifest_is_not_read_and_with_force_is_replaced(
    tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(outside, ["summary.json"])  # a manifest codegen could have written, outside --out
    out.mkdir()
    (out / MANIFEST).symlink_to(outside / MANIFEST)
    (out / "summary.json").write_text("the user's\n")
    with pytest.raises(UsageError, match=f"its {MANIFEST} is not one this command writes \\(it is a symlink\\)"):
        take(out)
    output = take(out, force=True)
    output.write("graph_0/wrapper.py", "print()\n")
    assert output.finish() == [] and (out / "summary.json").read_text() == "the user's\n"
    assert not (out / MANIFEST).is_symlink() and listed(out) == ["graph_0/wrapper.py"]
    assert listed(outside) == ["summary.json"]


def test_a_hard_linked_file_is_replaced_not_overwritten_in_place(
    tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, ["summary.json"])
    os.link(outside / "victim.txt", out / "summary.json")
    output = take(out)
    output.write("summary.json", "new\n")
    output.finish()
    assert (outside / "victim.txt").read_text() == "not codegen's\n"
    assert (out / "summary.json").read_text() == "new\n"


def test_a_symlinked_graph_folder_is_refused_before_or_while_writing(
    tmp_path: Path, outside: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, ["summary.json", "graph_0/wrapper.py"])
    (out / "graph_0").symlink_to(outside)
    with pytest.raises(UsageError, match="'graph_0/wrapper.py': 'graph_0' in --out is a symlink"):
        take(out)
    manifest(out, ["summary.json"])  # not listed: found when the run writes into it
    output = take(out)
    with pytest.raises(Refused, match="'graph_0/wrapper.py': 'graph_0' in --out is a symlink"):
        output.write("graph_0/wrapper.py", "print('generated')\n")
    assert not (outside / "wrapper.py").exists()


# Losing its own files


def test_entries_are_normalised_once_so_a_rerun_keeps_its_new_files(
    tmp_path: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    manifest(out, ["./summary.json", "graph_0//wrapper.py", MANIFEST, "graph_0/./old.py"])
    (out / "graph_0").mkdir()
    (out / "graph_0" / "old.py").write_text("stale\n")
    output = take(out)
    assert sorted(output.previous) == ["graph_0/old.py", "graph_0/wrapper.py", "summary.json"]
    output.write("summary.json", "{}\n")
    output.write("graph_0/wrapper.py", "print()\n")
    output.finish()
    output.release()
    assert (out / "summary.json").is_file() and (out / "graph_0" / "wrapper.py").is_file()
    assert not (out / "graph_0" / "old.py").exists()
    assert listed(out) == ["graph_0/wrapper.py", "summary.json"] and on_disk(out) == set(listed(out))
    take(out).release()  # the next run is not refused


# Bad manifests: exit 2, no traceback


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[" * 200_000, "nested too deeply"),
        ('{"tool": "npu-inductor-compat codegen", "version": 2, "files": []}', "expected"),
        ('{"tool": "npu-inductor-compat codegen", "version": 1, "files": [], "extra": 1}', "expected"),
    ],
)
def test_a_manifest_not_of_the_documented_shape_is_a_usage_error(
    content: str, problem: str, tmp_path: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_bytes(content.encode("latin-1"))
    with pytest.raises(UsageError) as caught:
        take(out)
    assert f"its {MANIFEST} is not one this command writes (" in str(caught.value)
    assert problem in str(caught.value)


def test_a_bad_manifest_exits_2_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from npu_inductor_compat.__main__ import main

    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text("[" * 200_000)
    script = tmp_path / "script.py"
    script.write_text("raise SystemExit('must not run')\n")
    with pytest.raises(SystemExit) as caught:
        main(["codegen", str(script), "--out", str(out)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "not one this command writes (nested too deeply" in err and "Traceback" not in err


# One writer per folder


def test_a_second_run_into_a_folder_in_use_fails_fast_naming_the_holder(
    tmp_path: Path, take: Callable[..., Output]
) -> None:
    out = tmp_path / "out"
    first = take(out)
    with pytest.raises(UsageError, match=f"another codegen run \\(pid {os.getpid()}\\) is writing there"):
        take(out)
    first.write("summary.json", "{}\n")
    first.finish()
    first.release()
    assert not (out / output_module.LOCK).exists()
    take(out)  # free again


def test_a_lock_file_that_is_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / output_module.LOCK).symlink_to(outside / "victim.txt")
    with pytest.raises(UsageError, match="is a symbolic link; remove it"):
        prepare_output(out, False)
    (out / output_module.LOCK).unlink()
    os.link(outside / "victim.txt", out / output_module.LOCK)
    with pytest.raises(UsageError, match="hard link"):
        prepare_output(out, False)
    assert (outside / "victim.txt").read_text() == "not codegen's\n"


def test_each_file_is_listed_before_it_is_created(tmp_path: Path, take: Callable[..., Output]) -> None:
    """As after a SIGKILL right after a write: the manifest already lists it."""
    out = tmp_path / "out"
    output = take(out)
    output.write("graph_0/wrapper.py", "print()\n")
    assert "graph_0/wrapper.py" in listed(out)


class Interrupted(BaseException):
    pass


class _StopAt:
    """``os`` for output.py, raising Interrupted at the n-th call that changes the disk (as a signal could)."""

    CHANGES = ("open", "write", "replace", "unlink", "mkdir", "rmdir")

    def __init__(self, stop_at: int) -> None:
        self.calls, self.stop_at = 0, stop_at

    def __getattr__(self, name: str) -> Any:
        found = getattr(os, name)
        if name not in self.CHANGES:
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.stop_at:
                raise Interrupted
            return found(*args, **kwargs)

        return call


def test_a_run_stopped_at_any_point_leaves_every_file_on_disk_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(out: Path) -> None:
        output = prepare_output(out, False)
        try:
            for name in ("graph_0/wrapper.py", "graph_0/kernels/k.py", "graph_0/wrapper.py", "summary.json"):
                output.write(name, "text\n")
            output.finish()
        finally:
            output.release()

    stop_at = 1
    while True:
        out = tmp_path / f"run{stop_at}"
        manifest(out, ["old/stale.py", "summary.json"])
        (out / "old").mkdir()
        (out / "old" / "stale.py").write_text("from an earlier run\n")
        counting = _StopAt(stop_at)
        monkeypatch.setattr(output_module, "os", counting)
        try:
            run(out)
        except Interrupted:
            pass
        else:
            break
        finally:
            monkeypatch.setattr(output_module, "os", os)
        assert on_disk(out) <= set(listed(out)), stop_at
        stop_at += 1
    assert stop_at > 20  # every write, replace and delete was a stopping point


def test_a_forked_copy_of_the_run_writes_nothing(tmp_path: Path, take: Callable[..., Output]) -> None:
    out = tmp_path / "out"
    output = take(out)
    child = os.fork()
    if child == 0:
        try:
            output.write("from_the_fork.txt", "twice\n")
            output.checkpoint()
            output.finish()
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    assert not (out / "from_the_fork.txt").exists() and not (out / MANIFEST).exists()


# Real runs (slow tier)

COMPILES = "import torch\ntorch.compile(lambda t: t + 1)(torch.ones(4).to('npu'))\n"


def codegen(tmp_path: Path, script_text: str, out: Path, env: dict[str, str] | None = None) -> Any:
    script = tmp_path / "script.py"
    script.write_text(script_text)
    return run_codegen(script, out=out, cwd=tmp_path, env=env)  # stock Inductor, whatever the default here


@pytest.mark.subprocess
def test_a_script_that_calls_os_exit_makes_codegen_fail_saying_so(tmp_path: Path) -> None:
    done = codegen(tmp_path, COMPILES + "import os\nos._exit(0)\n", tmp_path / "out")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "the run ended with status 0 before summary.json was written" in done.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.subprocess
def test_a_script_that_forks_writes_the_output_once(tmp_path: Path) -> None:
    script = COMPILES + "import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\nprint('ran in', os.getpid())\n"
    out = tmp_path / "out"
    done = codegen(tmp_path, script, out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("ran in") == 2  # the script ran on in both processes
    assert done.stdout.count(f"wrote {out / 'summary.json'}") == 1, done.stdout  # one of them wrote
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["graphs"]) == 1 and on_disk(out) == set(listed(out)) == set(summary["files"])


# Appended to the script: codegen's first write of an output file after the script (a graph's) stops with its
# partial file complete but not yet renamed, says so in STARTED and waits there to be signalled.
STOP_MID_WRITE = """
import os, time
from npu_inductor_compat.tools.simulated.codegen import output

real_replace = os.replace


def replace(src, dst, *args, **kwargs):
    if dst != output.MANIFEST and src == output.partial_name(dst):
        open(STARTED, "w").close()
        time.sleep(600)
    return real_replace(src, dst, *args, **kwargs)


os.replace = replace
"""


@pytest.mark.subprocess
def test_sigterm_to_codegen_ends_the_run_and_leaves_nothing_unlisted(tmp_path: Path) -> None:
    """SIGTERM while codegen writes the graphs' files: the run ends saying so, and every file it left in --out (the
    partial file it was writing included) is in the manifest, so the next run can delete it."""
    out = tmp_path / "out"
    script = tmp_path / "script.py"
    started = tmp_path / "started"
    script.write_text(COMPILES + STOP_MID_WRITE.replace("STARTED", repr(str(started))))
    command = codegen_command(script, "--quiet", out=out)  # stock Inductor, whatever the default on this torch
    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=child_env())
    try:
        for _ in range(1200):
            if started.exists() or run.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert started.exists(), err[-3000:]
    assert run.returncode == 1 and "the run was killed by SIGTERM" in err, err[-3000:]
    assert not (out / output_module.LOCK).exists()
    left = on_disk(out)
    assert any(name.endswith(".partial") for name in left), left  # stopped mid-write, not before or after it
    assert left <= set(listed(out)), left - set(listed(out))


THREADED = textwrap.dedent(
    """
    import threading
    import torch

    done = []

    def compile_in_a_thread():
        done.append(torch.compile(lambda t: (t * 3).sin())(torch.ones(8).to("npu")).cpu())

    thread = threading.Thread(target=compile_in_a_thread)
    thread.start()
    thread.join()
    assert len(done) == 1, "the thread's compile failed"
    """
)


@pytest.mark.subprocess
@pytest.mark.compile
def test_a_shared_inductor_cache_hides_no_graph_of_a_threaded_script(tmp_path: Path) -> None:
    """torch 2.12 keeps config patches per thread: the thread's compile hit the cache the first run filled."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor_cache")}
    for run in ("first", "second"):
        out = tmp_path / run
        done = codegen(tmp_path, THREADED, out, env)
        assert done.returncode == 0, f"{run} run: {done.stderr[-3000:]}"
        summary = json.loads((out / "summary.json").read_text())
        assert [(graph["device"], graph["status"]) for graph in summary["graphs"]] == [("npu", "ok")], run
        assert (out / "graph_0" / "wrapper.py").is_file(), run


def test_a_file_is_read_back_only_through_real_folders_and_as_a_regular_file(tmp_path: Path) -> None:
    """What the run reads back of its own output (the static kernel check) cannot be redirected outside --out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.py").write_text("secret")
    output = prepare_output(tmp_path / "out", force=False)
    try:
        output.write("graph_0/kernels/k.py", "def k(): pass\n")
        assert output.read("graph_0/kernels/k.py") == "def k(): pass\n"
        os.unlink(tmp_path / "out" / "graph_0" / "kernels" / "k.py")
        os.symlink(outside / "k.py", tmp_path / "out" / "graph_0" / "kernels" / "k.py")
        with pytest.raises(Refused, match="symlink"):
            output.read("graph_0/kernels/k.py")
        os.mkfifo(tmp_path / "out" / "graph_0" / "fifo.py")
        with pytest.raises(Refused, match="not a regular file"):
            output.read("graph_0/fifo.py")
    finally:
        output.release()
