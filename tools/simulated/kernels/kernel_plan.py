"""What the kernel check lowers: each distinct kernel source once, none whose verdicts the cache holds; then every
kernel file gets the results of its source, and complete fresh verdicts are stored (kernel_verdicts.py)."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_inductor_compat.tools.simulated.kernels import kernel_verdicts as verdicts


def code_digest() -> str:
    """Every Python file in the folders of this package's loaded modules and of the worker's: a verdict depends on
    the worker's code and the records it applies, so a change there (an editable install too) makes the cache's old
    entries unreachable. Folders, not one root: ``package-dir`` maps compat/, common/, tools/, v*/ apart."""
    import importlib.util

    folders = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name.partition(".")[0] == "npu_inductor_compat" and isinstance(file, str):
            folders.add(Path(file).resolve().parent)
    worker = importlib.util.find_spec("npu_inductor_compat.tools.simulated.kernels.kernel_lowering")
    if worker is not None and worker.origin:
        folders.add(Path(worker.origin).resolve().parent)
    digest = hashlib.sha256()
    for folder in sorted(folders):
        for path in sorted(folder.glob("*.py")):
            digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass
class CheckPlan:
    folder: Path | None  # the verdict cache (None: --no-cache)
    context: dict[str, Any]
    sources: dict[str, list[Path]] = field(default_factory=dict)  # digest -> the files with that source
    # digest -> (results, configs, the environment of the worker that lowered them)
    cached: dict[str, tuple[list[dict[str, Any]], int, dict[str, Any]]] = field(default_factory=dict)
    to_lower: list[Path] = field(default_factory=list)  # one file per source not cached
    not_checked: int = 0  # configs left out by the config limit

    @property
    def duplicates(self) -> int:
        return sum(len(paths) - 1 for paths in self.sources.values())

    def finish(
        self, lowered: list[dict[str, Any]], totals: dict[str, tuple[int, int]], environment: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Every kernel file's results, in file order: its source's, fresh (``lowered``, each file's configs and
        checked count from the workers' "done" events in ``totals``) or cached. A source whose every result the
        worker gave itself and which it finished is stored with the workers' ``environment``; when no worker ran,
        ``environment`` gets a cached entry's."""
        by_file, orphans = by_kernel_file(lowered)
        results: list[dict[str, Any]] = []
        for digest, paths in self.sources.items():
            if digest in self.cached:
                found, configs, was = self.cached[digest]
                self.not_checked += max(configs - len(found), 0)
                if not self.to_lower and not environment:
                    environment.update(was)
            else:
                found = by_file.get(str(paths[0]), [])
                configs, checked = totals.get(str(paths[0]), (0, -1))
                self.not_checked += max(configs - checked, 0) if checked >= 0 else 0
                complete = checked == len(found) and not any(result.get("lost") for result in found)
                if self.folder is not None and found and complete:
                    verdicts.store(self.folder, self._key(digest), found, configs, environment)
            for path in paths:
                results.extend({**result, "file": str(path)} for result in found)
        return [*results, *orphans]

    def _key(self, digest: str) -> str:
        return verdicts.verdict_key(digest, self.context)


def by_kernel_file(results: list[dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """``results`` by kernel file, in order, and those of no file (a worker that failed before any kernel)."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    orphans = []
    for result in results:
        if result.get("file") is None:
            orphans.append(result)
        else:
            by_file.setdefault(str(result["file"]), []).append(result)
    return by_file, orphans


def plan_check(files: list[Path], context: dict[str, Any], folder: Path | None) -> CheckPlan:
    """Group ``files`` by source; look each source up in the verdict cache in ``folder`` (None: no cache)."""
    plan = CheckPlan(folder, {**context, "code": code_digest()})
    for path in files:
        plan.sources.setdefault(verdicts.source_digest(path), []).append(path)
    for digest, paths in plan.sources.items():
        found = verdicts.load(folder, plan._key(digest)) if folder is not None else None
        if found is not None:
            plan.cached[digest] = found
        else:
            plan.to_lower.append(paths[0])
    return plan
