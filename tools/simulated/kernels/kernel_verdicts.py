"""The kernel check's verdict cache: every config's result for one kernel source, keyed by that source and by
what lowers it (triton-ascend, torch, torch_npu, records, config limit), one checksummed JSON file per key."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS"
FORMAT = 1  # bump when a result's fields or their meaning change: older entries are then never read
FIELDS = ("config", "stage", "ok", "error", "seconds", "note")  # what a cached result keeps (no file, no kernel)


def cache_dir() -> Path:
    """$NPU_INDUCTOR_COMPAT_KERNEL_VERDICTS, else kernel_verdicts/ in the project's cache folder."""
    from npu_inductor_compat.tools.wheel_cache import cache_base

    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else cache_base() / "kernel_verdicts"


# Inductor and torch_npu join a load's or store's axis masks in set order ("r0_mask & xmask", "x2_mask & y0_mask &
# y1_mask"), which Python's string hashing varies between processes: two runs of one model differ there, and only
# there (stock on torch 2.7.1; ResNet-18 on 2.7.1.post11). A chain of masks that is a whole argument (after ", " or
# "(", before "," or ")") is sorted for the key: & commutes.
_MASK_ARGUMENT = re.compile(r"(?:(?<=, )|(?<=\())(\w*mask(?: & \w*mask)+)(?=[,)])")


def canonical(text: str) -> str:
    """``text`` with every whole-argument chain of masks in sorted order (see _MASK_ARGUMENT)."""
    return _MASK_ARGUMENT.sub(lambda found: " & ".join(sorted(found.group(1).split(" & "))), text)


def source_digest(path: Path) -> str:
    """What makes two kernel files one kernel to lower: their text (the source, its name and its configs), up to
    the order of a whole-argument chain of masks."""
    return hashlib.sha256(canonical(path.read_text()).encode()).hexdigest()


def verdict_key(digest: str, context: dict[str, Any]) -> str:
    """The cache key of a kernel source (``digest``) lowered in ``context`` (versions, records, limits)."""
    text = json.dumps({"format": FORMAT, "source": digest, **context}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load(folder: Path, key: str) -> tuple[list[dict[str, Any]], int, dict[str, Any]] | None:
    """The cached results for ``key``, how many configs the kernel has and the worker's environment, or None:
    absent, not a regular file (a link is never followed), or damaged (unreadable, not the format, another key, a
    checksum that does not match): then it is recomputed."""
    try:
        fd = os.open(folder / f"{key}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            entry = json.loads(file.read())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    results, configs, environment = entry.get("results"), entry.get("configs"), entry.get("environment")
    if not isinstance(results, list) or not isinstance(configs, int) or not isinstance(environment, dict):
        return None
    if entry.get("sha256") != _checksum([results, configs, environment]):
        return None
    if not all(isinstance(result, dict) and set(result) <= set(FIELDS) for result in results):
        return None
    return results, configs, environment


def store(
    folder: Path, key: str, results: list[dict[str, Any]], configs: int, environment: dict[str, Any] | None = None
) -> bool:
    """Write ``results`` (of a kernel with ``configs`` configs, lowered in a worker whose environment event said
    ``environment``) under ``key``: into a new file beside it, then renamed over it (a reader sees the old entry
    or the new one, never part of one; two runs storing one key both store the same). False when it cannot."""
    kept = [{field: result.get(field) for field in FIELDS if field in result} for result in results]
    environment = dict(environment or {})
    checksum = _checksum([kept, configs, environment])
    entry = {"format": FORMAT, "key": key, "configs": configs, "environment": environment, "results": kept}
    entry["sha256"] = checksum
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            return False
        fd, temporary = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w") as file:
                json.dump(entry, file)
            os.replace(temporary, folder / f"{key}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def _checksum(content: Any) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
