"""codegen's --out folder: one writer at a time (a lock naming its pid), each file listed in the manifest before it
exists, and nothing outside the folder read, written or deleted (every path is walked without following a link)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from pathlib import Path, PurePosixPath

from npu_inductor_compat.tools import cache_entry

MANIFEST = "codegen_manifest.json"
MANIFEST_TOOL = "npu-inductor-compat codegen"
MANIFEST_VERSION = 1
SUMMARY = "summary.json"
LOCK = ".codegen.lock"  # the run writing here: its pid; removed when the run ends
MANIFEST_LIMIT = 16 * 1024 * 1024  # bytes: a manifest of a million files is well under this


def partial_name(name: str) -> str:
    """Where a file is written before it replaces ``name`` in one step (os.replace)."""
    return f".{name}.partial"


PARTIAL = partial_name(MANIFEST)
OWN = frozenset({MANIFEST, PARTIAL, LOCK})  # codegen's bookkeeping in --out, never listed in the manifest

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UsageError(Exception):
    """A bad command line or --out, found before the script runs (exit 2)."""


class Refused(Exception):
    """A path that would leave --out or go through a link in it; the message names the entry."""


def normalise(entry: object) -> str:
    """A path relative to --out in the one form entries are compared in (``a/b``: no ``.``, no empty parts).
    Raises ValueError for anything else (absolute, ``..``, empty, not a string)."""
    if not isinstance(entry, str) or "\0" in entry:
        raise ValueError(f"{entry!r} is not a relative file path")
    path = PurePosixPath(entry)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"{entry!r} is not a file path inside --out (relative, without '..')")
    return "/".join(path.parts)


def _open_folder(root_fd: int, parts: list[str], entry: str, create: bool) -> int | None:
    """An fd of the folder ``parts`` under root_fd, each step opened without following a link (created when
    ``create``); None when a step does not exist and not ``create``. Raises Refused for a link or a file on the way."""
    fd = os.dup(root_fd)
    try:
        for depth, part in enumerate(parts, 1):
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                if create:
                    raise
                os.close(fd)
                return None
            except OSError as err:
                if err.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                where = "/".join(parts[:depth])
                raise Refused(
                    f"{entry!r}: {where!r} in --out is a symlink or a file, not a folder; codegen never writes, "
                    "reads or deletes through it"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _replace(folder_fd: int, name: str, data: bytes) -> None:
    """Write ``name`` in the folder as a new file (via its partial name, then os.replace): a symlink or a hard link
    there is replaced, never written through."""
    temporary = partial_name(name)
    try:
        os.unlink(temporary, dir_fd=folder_fd)  # a partial file left by an interrupted run
    except FileNotFoundError:
        pass
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder_fd
    )
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


class Output:
    """The --out folder of one run. Every file is listed in the manifest before it is created and written through
    os.replace, so the manifest lists every file on disk whenever the run stops; a later run deletes only what its
    predecessor listed. Writes from any process but ``owner`` (a fork of it) are skipped."""

    def __init__(self, root: Path, previous: list[str], root_fd: int, lock_fd: int) -> None:
        self.root = root  # absolute: the script may change the working directory
        self.previous = previous  # normalised entries an earlier codegen run listed
        self.written: list[str] = []
        self.owner = os.getpid()
        self._root_fd, self._lock_fd, self._lock_pid = root_fd, lock_fd, os.getpid()

    def write(self, relative: str, text: str) -> str:
        """Write a file under --out; returns its normalised path. Raises Refused if a folder on the way is a link."""
        entry = normalise(relative)
        if entry in OWN:
            raise ValueError(f"{entry!r} is codegen's own bookkeeping, not an output file")
        if os.getpid() != self.owner:
            return entry
        *folders, name = entry.split("/")
        if entry not in self.written:
            self.written.append(entry)
        self._write_manifest({*self.previous, *self.written, "/".join([*folders, partial_name(name)])})
        folder = _open_folder(self._root_fd, folders, entry, create=True)
        assert folder is not None
        try:
            _replace(folder, name, text.encode())
        except IsADirectoryError:
            raise Refused(f"{entry!r}: a folder of that name is in the way in --out") from None
        finally:
            os.close(folder)
        return entry

    def read(self, relative: str) -> str:
        """A file this run wrote, read without following a link on the way (Refused otherwise, naming it)."""
        entry = normalise(relative)
        *folders, name = entry.split("/")
        folder = _open_folder(self._root_fd, folders, entry, create=False)
        if folder is None:
            raise FileNotFoundError(f"{entry!r} is not in --out")
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise
            raise Refused(f"{entry!r} in --out is a symlink; codegen never reads through it") from None
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise Refused(f"{entry!r} in --out is not a regular file")
            return file.read().decode()

    def checkpoint(self) -> None:
        """List every file either run wrote (each write already does)."""
        if os.getpid() == self.owner:
            self._write_manifest({*self.previous, *self.written})

    def finish(self) -> list[str]:
        """Delete the files only the previous run listed (and the folders that leaves empty), then list this run's
        files alone. Returns the entries refused (a link on the way), each naming the entry."""
        if os.getpid() != self.owner:
            return []
        stale = sorted(set(self.previous) - set(self.written))
        refused = []
        for entry in stale:
            *folders, name = entry.split("/")
            try:
                folder = _open_folder(self._root_fd, folders, entry, create=False)
            except Refused as err:
                refused.append(str(err))
                continue
            if folder is None:
                continue
            try:
                if stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=folder)  # a link someone put in its place is not ours: kept
            except FileNotFoundError:
                pass
            finally:
                os.close(folder)
        emptied = {tuple(entry.split("/")[:depth]) for entry in stale for depth in range(1, entry.count("/") + 1)}
        for parts in sorted(emptied, key=len, reverse=True):
            try:
                parent = _open_folder(self._root_fd, list(parts[:-1]), "/".join(parts), create=False)
            except Refused:
                continue
            if parent is not None:
                try:
                    os.rmdir(parts[-1], dir_fd=parent)  # only an empty folder; a link is not one
                except OSError:
                    pass
                finally:
                    os.close(parent)
        self._write_manifest(set(self.written))
        return refused

    def release(self) -> None:
        """End the run's hold on --out (the process that took it; a no-op in any other)."""
        if self._lock_fd < 0 or os.getpid() != self._lock_pid:
            return
        try:
            os.unlink(LOCK, dir_fd=self._root_fd)  # before unlocking: a waiting run then sees a new file
        except FileNotFoundError:
            pass
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)
        os.close(self._root_fd)
        self._lock_fd = self._root_fd = -1

    def _write_manifest(self, files: set[str]) -> None:
        manifest = {"tool": MANIFEST_TOOL, "version": MANIFEST_VERSION, "files": sorted(files - OWN)}
        _replace(self._root_fd, MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())


def prepare_output(out: Path, force: bool) -> Output:
    """Check and take --out before anything runs: a folder (created if missing) no other run is writing, either
    empty, or written by an earlier codegen run (its manifest), or --force. Raises UsageError saying what is wrong."""
    out = Path(os.path.abspath(out))  # the script may change the working directory before anything is written
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        root_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise UsageError(f"--out {out}: cannot write there ({err.strerror or err})") from None
    lock_fd = -1
    try:
        lock_fd = _take_lock(out, root_fd)
        previous = _previous_files(out, root_fd, force)
    except BaseException:
        if lock_fd >= 0:
            os.close(lock_fd)
        os.close(root_fd)
        raise
    return Output(out, previous, root_fd, lock_fd)


def _take_lock(out: Path, root_fd: int) -> int:
    """flock on --out/.codegen.lock (fails fast when held, naming the holder); the file then holds our pid."""
    for _ in range(5):  # a holder that ends between our open and our flock removes the file: open it again
        try:
            fd = cache_entry.open_lock(LOCK, dir_fd=root_fd)
        except cache_entry.LockRefused as refused:
            if refused.reason == "unopenable" and refused.err is not None:
                raise UsageError(f"--out {out}: cannot write there ({refused.err.strerror or refused.err})") from None
            never = " (codegen never writes through one)" if refused.err is not None else ""
            raise UsageError(f"--out {out}: {LOCK} is {refused.reason}; remove it{never}") from None
        found = os.fstat(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(
                f"--out {out}: another codegen run (pid {holder}) is writing there; wait for it to end, or choose "
                "another --out"
            ) from None
        try:
            now = os.stat(LOCK, dir_fd=root_fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (found.st_dev, found.st_ino):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)
    raise UsageError(f"--out {out}: other codegen runs keep taking it; try again")


def _previous_files(out: Path, root_fd: int, force: bool) -> list[str]:
    names = set(os.listdir(root_fd)) - {LOCK, PARTIAL}
    if not names:
        return []
    if MANIFEST not in names:
        problem = f"it is not empty and has no {MANIFEST}, so this command did not write it"
    else:
        try:
            return read_manifest(root_fd)
        except ValueError as err:
            problem = f"its {MANIFEST} is not one this command writes ({err})"
    if not force:
        raise UsageError(
            f"--out {out}: {problem}; choose another directory, or add --force to write into it (nothing in it is "
            "deleted; files with the names codegen writes are replaced)"
        )
    return []


def read_manifest(root_fd: int) -> list[str]:
    """The normalised entries of --out's manifest, each a path inside --out reached without a link. Raises
    ValueError naming what is not the shape codegen writes ({"tool", "version": 1, "files": [relative paths]})."""
    try:
        fd = os.open(MANIFEST, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError as err:
        raise ValueError("it is a symlink" if err.errno == errno.ELOOP else f"unreadable: {err.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("it is not a file")
        raw = file.read(MANIFEST_LIMIT + 1)
    if len(raw) > MANIFEST_LIMIT:
        raise ValueError(f"larger than {MANIFEST_LIMIT} bytes")
    try:
        data = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"unreadable: {err}") from None
    except RecursionError:
        raise ValueError("nested too deeply to be a manifest") from None
    expected = f'{{"tool": "{MANIFEST_TOOL}", "version": {MANIFEST_VERSION}, "files": [relative paths]}}'
    if not isinstance(data, dict) or set(data) != {"tool", "version", "files"}:
        raise ValueError(f"expected {expected}")
    if data["tool"] != MANIFEST_TOOL or data["version"] != MANIFEST_VERSION or not isinstance(data["files"], list):
        raise ValueError(f"expected {expected}")
    entries: dict[str, None] = {}
    for item in data["files"]:
        entry = normalise(item)
        if entry in OWN:
            continue  # the manifest never lists itself: nothing of codegen's own is deleted for it
        *folders, _ = entry.split("/")
        try:
            folder = _open_folder(root_fd, folders, entry, create=False)
        except Refused as err:
            raise ValueError(str(err)) from None
        if folder is not None:
            os.close(folder)
        entries[entry] = None
    return list(entries)
