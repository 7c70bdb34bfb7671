"""The simulated NPU extension's build cache and lock, with a stand-in build step (the real build is one tier up).

The lock is a real flock on a real file; holders are real threads and processes. Only the compiler is replaced.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from npu_inductor_compat.tools.simulated.npu import device, extension_build

pytestmark = pytest.mark.once  # file locking and cache keys: nothing here depends on torch's Inductor

NAME = "ext"


def fake_build(calls: list[Path], seconds: float = 0.0) -> object:
    def build(folder: Path) -> str:
        calls.append(folder)
        time.sleep(seconds)
        (folder / f"{NAME}.so").write_bytes(b"library")
        return "module"

    return build


def test_the_key_follows_the_source_and_torch_build_never_the_path_or_venv(tmp_path: Path) -> None:
    torch_build = ("2.12.1+cu130", "abc", "13.0", "cxx11abi=True")
    key = extension_build.build_key(b"source", ("-O1",), torch_build)
    assert key == extension_build.build_key(b"source", ("-O1",), torch_build)  # same bytes from another checkout
    assert key.startswith("torch_2_12_1_cu130-")
    assert key != extension_build.build_key(b"source!", ("-O1",), torch_build)
    assert key != extension_build.build_key(b"source", ("-O2",), torch_build)
    assert key != extension_build.build_key(b"source", ("-O1",), ("2.12.1+cu130", "abd", "13.0", "cxx11abi=True"))


def test_the_real_key_is_computed_from_the_bytes_of_the_source(tmp_path: Path) -> None:
    """Two checkouts (two paths, same bytes) share one build folder: the build is reused, not redone."""
    copy = tmp_path / "elsewhere" / "device_ext.cpp"
    copy.parent.mkdir()
    copy.write_bytes(device.EXTENSION_SOURCE.read_bytes())
    build = extension_build._torch_build()
    assert extension_build.build_key(copy.read_bytes(), ("-O1",), build) == extension_build.build_key(
        device.EXTENSION_SOURCE.read_bytes(), ("-O1",), build
    )


def test_a_finished_build_is_reused_without_building_or_locking(tmp_path: Path) -> None:
    calls: list[Path] = []
    folder = tmp_path / "key"
    built, result = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", print)
    assert (built.reused, result, calls) == (False, "module", [folder])
    again, result = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", print)
    assert (again.reused, result, len(calls)) == (True, None, 1)
    assert (folder.with_name("key.lock")).read_text() == ""  # released cleanly: no holder named


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_lock_that_is_a_link_is_refused_and_what_it_names_is_left_whole(kind: str, tmp_path: Path) -> None:
    """Issue #44: the lock was opened with O_CREAT through a link and truncated, emptying any file the link named."""
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's data\n")
    folder = tmp_path / "cache" / "key"
    folder.parent.mkdir()
    lock = folder.with_name("key.lock")
    if kind == "symlink":
        lock.symlink_to(victim)
    else:
        os.link(victim, lock)
    calls: list[Path] = []
    with pytest.raises(RuntimeError, match=f"the lock {lock} is "):
        extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", print)
    assert victim.read_text() == "the user's data\n" and calls == [] and not folder.exists()


def test_a_lock_naming_an_impossible_pid_is_taken_over_not_a_crash(tmp_path: Path) -> None:
    """Issue #44: a lock naming a pid past any integer os.kill takes raised OverflowError out of the run."""
    folder = tmp_path / "key"
    folder.with_name("key.lock").write_text(f"{10**30}\n")
    notes: list[str] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build([]), "ext", notes.append)
    assert not built.reused and any("taking over" in note and str(10**30) in note for note in notes)


def test_a_truncated_library_beside_its_marker_is_built_again_with_a_note(tmp_path: Path) -> None:
    """Issue #44: a truncated .so with its 'complete' marker was loaded, and every later run died of SIGBUS."""
    folder = tmp_path / "key"
    calls: list[Path] = []
    extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", print)
    library = folder / f"{NAME}.so"
    library.write_bytes(library.read_bytes()[:3])
    notes: list[str] = []
    built, result = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", notes.append)
    assert (built.reused, result, len(calls)) == (False, "module", 2) and library.read_bytes() == b"library"
    assert any("is damaged" in note and "not the library its build recorded" in note for note in notes), notes


def test_a_build_folder_that_is_a_link_is_unlinked_and_what_it_names_is_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("the user's")
    folder = tmp_path / "cache" / "key"
    folder.parent.mkdir()
    folder.symlink_to(elsewhere)
    notes: list[str] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build([]), "ext", notes.append)
    assert not built.reused and not folder.is_symlink() and (folder / f"{NAME}.so").is_file()
    assert (elsewhere / "keep.txt").read_text() == "the user's" and any("symbolic link" in note for note in notes)


def test_a_stale_lock_is_taken_over_with_one_note(tmp_path: Path) -> None:
    dead_pid = int(Path("/proc/sys/kernel/pid_max").read_text())  # pids stay below it: never a live process
    folder = tmp_path / "key"
    folder.mkdir()
    (folder / "lock").write_text("")  # what torch's own baton leaves behind an interrupted build
    folder.with_name("key.lock").write_text(f"{dead_pid}\n")
    notes: list[str] = []
    calls: list[Path] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", notes.append)
    stale = [n for n in notes if "taking over" in n]
    assert len(stale) == 1 and f"pid {dead_pid}" in stale[0] and "is gone" in stale[0]
    assert not built.reused and calls == [folder] and not (folder / "lock").exists()


def test_a_live_holder_is_waited_for_naming_it_and_its_build_is_then_used(tmp_path: Path) -> None:
    folder = tmp_path / "key"
    first_calls: list[Path] = []
    started = threading.Event()

    def slow_build(target: Path) -> str:
        started.set()
        time.sleep(0.5)
        return str(fake_build(first_calls)(target))  # type: ignore[operator]

    holder = threading.Thread(target=extension_build.ensure_built, args=(folder, NAME, slow_build, "ext", print))
    holder.start()
    started.wait(5)
    notes: list[str] = []
    calls: list[Path] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", notes.append)
    holder.join()
    assert notes == [f"waiting for pid {os.getpid()}, which holds {folder}.lock while it builds ext"]
    assert built.reused and calls == [] and len(first_calls) == 1


def test_an_interrupted_build_leaves_nothing_that_blocks_or_is_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "key"

    def interrupted(target: Path) -> None:
        (target / f"{NAME}.so").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        extension_build.ensure_built(folder, NAME, interrupted, "ext", print)
    notes: list[str] = []
    calls: list[Path] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", notes.append)
    assert not built.reused and calls == [folder] and notes == [n for n in notes if "building ext" in n]
    assert (folder / f"{NAME}.so").read_bytes() == b"library"


@pytest.mark.subprocess
def test_a_killed_build_process_is_recovered_from(tmp_path: Path) -> None:
    """SIGKILL runs no cleanup: the kernel drops the flock, the pid stays in the file, the half build stays."""
    folder = tmp_path / "key"
    code = (
        "import sys, time; from pathlib import Path; "
        "from npu_inductor_compat.tools.simulated.npu import extension_build as e\n"
        "def build(t):\n    (t / 'ext.so').write_bytes(b'half'); print('building', flush=True); time.sleep(60)\n"
        f"e.ensure_built(Path({str(folder)!r}), 'ext', build, 'ext', print)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    while "building" not in child.stdout.readline():
        assert child.poll() is None, "the child stopped before building"
    child.kill()
    child.wait()
    notes: list[str] = []
    calls: list[Path] = []
    built, _ = extension_build.ensure_built(folder, NAME, fake_build(calls), "ext", notes.append)
    assert any(f"pid {child.pid}, is gone" in n for n in notes), notes
    assert not built.reused and (folder / f"{NAME}.so").read_bytes() == b"library"
