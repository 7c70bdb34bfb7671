"""The tools' caches on a bad day (issue #44): links, FIFOs, truncated files, another release's files, two runs at
once, for the header, torch_npu tree and triton-ascend caches. Each ends in a clear error or a rebuild, nothing
outside the cache touched; on crafted cache folders and wheels, without a network."""

from __future__ import annotations

import os
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.tools import cache_entry, wheel_cache
from npu_inductor_compat.tools.simulated.codegen import headers
from npu_inductor_compat.tools.simulated.kernels import triton_ascend_site
from npu_inductor_compat.tools.simulated.wheel import wheel_release

pytestmark = pytest.mark.once  # the caches' own code: nothing here depends on torch's Inductor
VERSION = "2.9.0.post9"  # exact (a post release): a cached wheel is used without asking the index
HEADER = "torch_npu/csrc/core/npu/NPUStream.h"
METADATA = "Metadata-Version: 2.1\nName: torch_npu\nVersion: {v}\nRequires-Dist: torch ==2.9.0+cpu\n"


def _wheel(wheels: Path, version: str = VERSION) -> Path:
    wheel = wheels / f"torch_npu-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"torch_npu/include/{HEADER}", "#pragma once\n" + "// padding\n" * 200)
        archive.writestr("torch_npu/__init__.py", "")
        archive.writestr("torch_npu/version.py", f"__version__ = '{version}'\n")
        archive.writestr("torch_npu/_inductor/__init__.py", "# torch_npu's _inductor\n" * 50)
        archive.writestr(f"torch_npu-{version}.dist-info/METADATA", METADATA.format(v=version))
    return wheel


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache base holding one cached torch_npu wheel; ``tmp_path / "outside"`` stands for the user's files."""
    wheels = tmp_path / "cache" / "torch_npu_wheels"
    wheels.mkdir(parents=True)
    monkeypatch.setenv(wheel_cache.WHEEL_CACHE_ENV, str(wheels))
    _wheel(wheels)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("the user's file\n")
    return tmp_path / "cache"


def _headers(notes: list[str]) -> Path:
    return headers._wheel_headers(VERSION).include


def _tree(notes: list[str]) -> Path:
    return wheel_release.unpacked(VERSION, announce=notes.append).root


# each cache of torch_npu's wheel: (its folder under the cache base, the call that uses it, a file inside an entry)
CACHES: dict[str, tuple[str, Callable[[list[str]], Path], str]] = {
    "headers": ("torch_npu_include", _headers, HEADER),
    "tree": (wheel_release.UNPACKED_DIR, _tree, "torch_npu/_inductor/__init__.py"),
}


def _untouched(outside: Path) -> None:
    assert sorted(path.name for path in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text() == "the user's file\n"


@pytest.mark.parametrize("kind", CACHES)
def test_a_link_where_the_cache_folder_should_be_is_refused_naming_it(kind: str, cache: Path) -> None:
    folder, use, _ = CACHES[kind]
    (cache / folder).symlink_to(cache.parent / "outside")
    with pytest.raises(RuntimeError, match=f"the cache folder {cache / folder} is a symbolic link; remove it"):
        use([])
    _untouched(cache.parent / "outside")


@pytest.mark.parametrize("kind", CACHES)
def test_a_link_where_an_entry_should_be_is_removed_never_followed(
    kind: str, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, use, inside = CACHES[kind]
    (cache / folder).mkdir()
    (cache / folder / VERSION).symlink_to(cache.parent / "outside")
    notes: list[str] = []
    entry = use(notes)
    assert not entry.is_symlink() and (entry / inside).is_file()
    said = " ".join(notes) + capsys.readouterr().err
    assert f"the cache entry {cache / folder / VERSION} is damaged (it is a symbolic link)" in said
    _untouched(cache.parent / "outside")


@pytest.mark.parametrize("kind", CACHES)
@pytest.mark.parametrize("odd", ["symlink", "fifo"])
def test_a_link_or_fifo_where_the_lock_should_be_is_refused_at_once(kind: str, odd: str, cache: Path) -> None:
    """A symlinked lock was opened with O_CREAT and truncated: the file it named was emptied (issue #44)."""
    folder, use, _ = CACHES[kind]
    (cache / folder).mkdir()
    lock = cache / folder / f"{VERSION}.lock"
    if odd == "symlink":
        lock.symlink_to(cache.parent / "outside" / "precious.txt")
    else:
        os.mkfifo(lock)
    expected = "is a symbolic link; remove it" if odd == "symlink" else "is not a plain file of its own"
    with pytest.raises(RuntimeError, match=f"the lock {lock} {expected}"):
        use([])
    _untouched(cache.parent / "outside")


@pytest.mark.parametrize("kind", CACHES)
@pytest.mark.parametrize("damage", ["truncated", "other-release", "half-written"])
def test_a_damaged_entry_is_set_aside_and_built_again_saying_why(
    kind: str, damage: str, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated cached header was blamed on the C++ checked against it ("2 C++ wrapper(s) failed"); another
    release's tree under a release's name, or a half-unpacked one, was an error to mend by hand (issue #44)."""
    _, use, inside = CACHES[kind]
    entry = use([])
    if damage == "truncated":
        (entry / inside).write_text("#pragma")
        why = f"{inside} is 7 bytes, it was"
    elif damage == "other-release":
        other = _wheel(cache / "torch_npu_wheels", "2.12.0.post3")
        cache_entry.set_aside(entry, "test", lambda _: None)
        if kind == "headers":
            headers._unpack_include(other, entry)
            why = "it was unpacked from torch_npu-2.12.0.post3-"
        else:
            wheel_release._unpack(VERSION, other, entry)  # its metadata pins VERSION's torch: only version.py differs
            why = "its torch_npu/version.py says '2.12.0.post3'"
        other.unlink()
    else:
        (entry / (headers.UNPACKED if kind == "headers" else wheel_release.FILES)).unlink()
        why = "it has no readable"
    capsys.readouterr()
    notes: list[str] = []
    assert use(notes) == entry
    said = " ".join(notes) + capsys.readouterr().err
    assert f"the cache entry {entry} is damaged (" in said and why in said, said
    assert (entry / inside).read_text().startswith(("#pragma once", "# torch_npu's _inductor"))
    assert sorted(path.name for path in entry.parent.iterdir()) == [VERSION, f"{VERSION}.lock"]  # nothing left over


@pytest.mark.parametrize("kind", CACHES)
def test_two_runs_at_once_unpack_once_and_both_succeed(kind: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, use, inside = CACHES[kind]
    unpacks: list[Path] = []
    module: Any = headers if kind == "headers" else wheel_release
    name = "_unpack_include" if kind == "headers" else "_unpack"
    original = getattr(module, name)

    def slow_unpack(*args: Any) -> None:
        unpacks.append(args[-1])
        threading.Event().wait(0.5)  # the other run arrives meanwhile, and waits for the lock
        original(*args)

    monkeypatch.setattr(module, name, slow_unpack)
    found: list[Path] = []
    runs = [threading.Thread(target=lambda: found.append(use([]))) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(found) == 2 and found[0] == found[1] and (found[0] / inside).is_file()
    assert len(unpacks) == 1, unpacks


def _fake_install(root: Path) -> None:
    """What pip --target leaves: triton-ascend's compiler module and a RECORD listing it (sizes)."""
    compiler = root / "triton" / "backends" / "ascend" / "compiler.py"
    compiler.parent.mkdir(parents=True)
    compiler.write_text("# triton-ascend\n")
    info = root / "triton_ascend-3.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton-ascend\nVersion: 3.2.0\n")
    (info / "RECORD").write_text(f"triton/backends/ascend/compiler.py,sha256=x,{compiler.stat().st_size}\n")


def test_the_triton_ascend_install_two_runs_at_once_a_link_and_a_linked_lock(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `--check-kernels` runs on an empty cache both ran `pip install --target` into one folder: one failed
    ("Target directory ... already exists"); a link in the install's place was used through (issue #44)."""
    installs: list[Path] = []

    def install(root: Path) -> None:
        installs.append(root)
        threading.Event().wait(0.5)
        _fake_install(root)

    monkeypatch.setattr(triton_ascend_site, "_install", install)
    found: list[Any] = []
    runs = [threading.Thread(target=lambda: found.append(triton_ascend_site._cached_install())) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    root = cache / "triton_ascend" / triton_ascend_site.TRITON_ASCEND
    assert [item.site for item in found] == [root, root] and installs == [root]
    cache_entry.set_aside(root, "test", lambda _: None)
    root.symlink_to(cache.parent / "outside")
    capsys.readouterr()
    assert triton_ascend_site._cached_install().site == root and not root.is_symlink()
    assert f"the cache entry {root} is damaged (it is a symbolic link)" in capsys.readouterr().err
    _untouched(cache.parent / "outside")
    lock = root.with_name(root.name + ".lock")
    lock.unlink()
    lock.symlink_to(cache.parent / "outside" / "precious.txt")
    cache_entry.set_aside(root, "test", lambda _: None)
    with pytest.raises(triton_ascend_site.KernelCheckUnavailable, match=f"the lock {lock} is a symbolic link"):
        triton_ascend_site._cached_install()
    _untouched(cache.parent / "outside")


def test_a_waiting_run_names_the_holder_only_when_that_pid_is_alive(tmp_path: Path) -> None:
    """Issue #44: a lock file left naming a dead pid was quoted as the holder while another process held it."""
    import fcntl

    lock = tmp_path / "entry.lock"
    lock.write_text("4242424242\n")  # a pid no process has
    holder = os.open(lock, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    notes: list[str] = []
    released = threading.Timer(0.3, lambda: os.close(holder))
    released.start()
    with cache_entry.lock(lock, "an entry", notes.append, "move it"):
        pass
    released.join()
    assert notes == [f"waiting for another process, which holds {lock} while it builds an entry"], notes
