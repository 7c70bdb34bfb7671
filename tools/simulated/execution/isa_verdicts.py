"""Inductor's CPU vector-ISA probe verdicts kept per machine: a process that builds C++ (a C++ wrapper's module under
``codegen --execute``) reads each verdict an earlier process reached instead of probing again (~3-4 s a probe)."""

# A probe (torch/_inductor/cpu_vec_isa.py, VecISA.check_build) builds a test program with the ISA's flags and loads
# it in a fresh interpreter; Inductor keeps the verdict per process. The key is torch's own for the test program
# (_get_isa_dry_compile_fingerprint: compiler version, flags, torch version), the ISA, the program and torch's git
# revision. Only a "yes" is kept: a "no" may be a passing fault (a full disk, a killed build).

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

FOLDER_ENV = "NPU_INDUCTOR_COMPAT_ISA_VERDICTS"


def verdict_folder() -> Path:
    """$NPU_INDUCTOR_COMPAT_ISA_VERDICTS, else isa_verdicts in the tools' cache (wheel_cache.cache_base)."""
    configured = os.environ.get(FOLDER_ENV)
    if configured:
        return Path(configured).expanduser().absolute()
    from npu_inductor_compat.tools.wheel_cache import cache_base

    return cache_base() / "isa_verdicts"


def verdict_key(isa: Any, code: str) -> str:
    import torch
    from torch._inductor import cpu_vec_isa

    flags = isa.build_arch_flags()
    parts = (
        type(isa).__name__,
        flags,
        cpu_vec_isa._get_isa_dry_compile_fingerprint(flags),
        str(torch.version.git_version),
        sys.implementation.cache_tag or "",
        code,
    )
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part.encode()).to_bytes(8, "little") + part.encode())
    return digest.hexdigest()[:32]


def _remembered(original: Any) -> Any:
    @wraps_original(original)
    def check_build(self: Any, code: str) -> bool:
        folder = verdict_folder()
        path = folder / verdict_key(self, code)
        kept = not folder.is_symlink() and not path.is_symlink()  # never read or written through a link
        if kept and path.is_file() and path.read_text() == "1":
            return True
        verdict = bool(original(self, code))
        if verdict and kept:
            scratch = path.with_name(f"{path.name}.{os.getpid()}")
            try:
                folder.mkdir(parents=True, exist_ok=True)
                scratch.write_text("1")
                os.replace(scratch, path)  # whole or absent for a process reading it at the same time
            except OSError:  # a cache that cannot be written: the next process probes again
                scratch.unlink(missing_ok=True)
        return verdict

    return check_build


ISA_VERDICTS_RECORD = Patch(
    id="execute-isa-verdicts",
    layer="capture",
    why="each process that builds C++ probes every CPU vector ISA again (~20 s); the verdict is the machine's",
    upstream="torch._inductor.cpu_vec_isa (VecISA.check_build, per-process verdicts)",
    remove_when="Inductor keeps its ISA verdicts across processes",
    changes=(Change("torch._inductor.cpu_vec_isa:VecISA.check_build", _remembered),),
)

__all__ = ["FOLDER_ENV", "ISA_VERDICTS_RECORD", "verdict_folder", "verdict_key"]
