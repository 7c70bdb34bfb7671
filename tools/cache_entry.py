"""What every cache of the tools keeps to: one lock per entry, never opened through a link; an entry built aside,
listed (each file's size) and renamed in; checked against its list on use; a damaged one set aside and built again."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

Note = Callable[[str], None]


def say(message: str) -> None:
    """The caches' default note: one line on stderr."""
    print(message, file=sys.stderr, flush=True)


class CacheUnusable(RuntimeError):
    """A cache entry or its lock cannot be used as it is (the message names the path and what to do)."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except (OverflowError, ValueError):  # a lock naming no possible pid (issue #44): nobody holds it
        return False
    return True


def _holder(fd: int) -> int | None:
    text = os.pread(fd, 64, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


class LockRefused(Exception):
    """A lock file that is not a plain file of its own: ``reason`` says what it is."""

    def __init__(self, reason: str, err: OSError | None = None) -> None:
        super().__init__(reason)
        self.reason, self.err = reason, err


def open_lock(name: str | Path, dir_fd: int | None = None) -> int:
    """A lock file opened (created if absent) for reading and writing, never through a link; LockRefused when it is
    a link, a hard link, a FIFO or a device, or cannot be opened. Shared by every cache and by --out."""
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=dir_fd)
    except OSError as err:
        raise LockRefused("a symbolic link" if err.errno == errno.ELOOP else "unopenable", err) from None
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
        os.close(fd)
        raise LockRefused("not a plain file of its own (a hard link, a FIFO?)")
    return fd


@contextlib.contextmanager
def lock(path: Path, what: str, note: Note, hint: str) -> Iterator[None]:
    """An exclusive lock on ``path`` (flock: the kernel drops it when its holder dies) whose file names the
    holder's pid; waits, saying for whom. Never opened through a link: truncating it would empty whatever file the
    link names (issue #44). ``hint``: how to move the cache, for the errors."""
    try:
        fd = open_lock(path)
    except LockRefused as refused:
        if refused.err is not None and refused.reason == "unopenable":
            raise CacheUnusable(
                f"cannot open the lock {path} ({refused.err.strerror or refused.err}); {hint}"
            ) from None
        never = " (the cache never writes through one)" if refused.err is not None else ""
        raise CacheUnusable(f"the lock {path} is {refused.reason}; remove it{never}, or {hint}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            # the pid in the file is the holder's only once it wrote it: a live one is named, any other is not
            who = f"pid {holder}" if holder is not None and _pid_alive(holder) else "another process"
            note(f"waiting for {who}, which holds {path} while it builds {what}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            stale = _holder(fd)
            if stale is not None and stale != os.getpid():
                gone = "is gone" if not _pid_alive(stale) else "no longer holds it"
                note(f"taking over the lock {path}: its holder, pid {stale}, {gone} (an interrupted build)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # released cleanly: no pid left to call stale
    finally:
        os.close(fd)  # closing drops the flock


def real_folder(path: Path, hint: str) -> Path:
    """``path``, a folder of the cache holding entries, created if absent; a link or a file there is refused: the
    cache writes only inside folders of its own."""
    if path.is_symlink():
        raise CacheUnusable(f"the cache folder {path} is a symbolic link; remove it (never written through), or {hint}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CacheUnusable(f"the cache folder {path} is unusable ({err.strerror or err}); {hint}") from None
    return path


def write_list(folder: Path, marker: str, extra: dict[str, object] | None = None) -> None:
    """Write ``marker`` into ``folder`` last: every regular file under it with its size (and ``extra``)."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(folder).as_posix()] = path.stat().st_size
    (folder / marker).write_text(json.dumps({**(extra or {}), "files": files}, indent=0, sort_keys=True))


def read_list(folder: Path, marker: str) -> dict[str, object] | None:
    try:
        found = json.loads((folder / marker).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("files"), dict) else None


def damage(folder: Path, marker: str, expect: Callable[[dict[str, object]], str | None] | None = None) -> str | None:
    """Why ``folder`` is not the entry its list describes (None: it is): a link, no list (built half-way, or by an
    older version of this package), a file missing, not a plain file, or of another size (a stat per file); or what
    ``expect`` finds wrong in the list's own fields."""
    if folder.is_symlink():
        return "it is a symbolic link"
    if not folder.exists():
        return "it is missing"
    if not folder.is_dir():
        return "it is not a folder"
    listed = read_list(folder, marker)
    if listed is None:
        return f"it has no readable {marker} (written last: built half-way, or by an older version of this tool)"
    for name, size in dict(listed["files"]).items():  # type: ignore[call-overload]
        try:
            found = (folder / name).lstat()
        except OSError:
            return f"{name} is missing"
        if not stat.S_ISREG(found.st_mode):
            return f"{name} is not a plain file"
        if found.st_size != size:
            return f"{name} is {found.st_size} bytes, it was {size} when built"
    return None if expect is None else expect(listed)


def set_aside(folder: Path, why: str, note: Note) -> None:
    """Move a damaged entry out of the way (a link is unlinked, never followed) and delete it, saying so."""
    if not os.path.lexists(folder):
        return
    note(f"the cache entry {folder} is damaged ({why}); building it again")
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
        return
    aside = folder.with_name(f"{folder.name}.damaged-{os.getpid()}-{time.monotonic_ns()}")
    os.replace(folder, aside)
    shutil.rmtree(aside, ignore_errors=True)  # rmtree never follows a link inside it


def ensure(
    target: Path, what: str, problem: Callable[[], str | None], build: Callable[[], None], note: Note, hint: str
) -> None:
    """The cache entry ``target`` as ``problem()`` wants it (None: nothing wrong), else built by ``build()`` under
    its lock (a run that waited finds it built), whatever was there set aside first, saying why; CacheUnusable when
    what was built is still not right (a wrong download)."""
    if problem() is None:
        return
    real_folder(target.parent, hint)
    with lock(target.with_name(target.name + ".lock"), what, note, hint):
        found = problem()
        if found is None:  # built by the holder we waited for
            return
        if found != "it is missing":
            set_aside(target, found, note)
        build()
        found = problem()
        if found is not None:
            raise CacheUnusable(f"the cache entry {target} was built and is still not right: {found}")
