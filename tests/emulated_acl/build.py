"""Build the emulated NPU runtime the whole C++ wrapper links against (tests and benchmarks only)."""

# ``build(directory, include)`` compiles, with the real headers (torch's, and torch_npu's ``include`` from the wheel
# paired with this torch line, which also carries CANN's ACL headers):
# - ``ascend/lib64/libascendcl.so`` from ``emulated_acl.cpp`` (the ACL runtime emulation);
# - ``torch_npu/lib/libtorch_npu.so`` from ``torch_npu_stub.cpp`` (the workspace allocator, the stream getter, the
#   task queue) and ``torch_npu_capture_stub.cpp`` (the capture status torch_npu answers),
# and lays out ``torch_npu/include`` (a link to the real headers) beside it, so that the package's own build options
# for device "npu" (``NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME``, ``ASCEND_HOME_PATH``) find everything as they would in a
# real install.

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class EmulatedNpu:
    torch_npu_home: Path  # include/ (real headers) and lib/libtorch_npu.so (stub)
    ascend_home: Path  # lib64/libascendcl.so (emulation)

    @property
    def libascendcl(self) -> Path:
        return self.ascend_home / "lib64" / "libascendcl.so"

    def env(self) -> dict[str, str]:
        return {
            "NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME": str(self.torch_npu_home),
            "ASCEND_HOME_PATH": str(self.ascend_home),
        }


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-6000:]}")


def build(directory: Path, include: Path, *, capture: bool = True) -> EmulatedNpu:
    """The two libraries under ``directory``; ``capture=False`` leaves aclmdlRICaptureGetInfo out of the ACL runtime,
    as a CANN from before aclgraph capture has it."""
    from torch.utils.cpp_extension import include_paths, library_paths

    from npu_inductor_compat.tools.simulated.codegen.headers import _cpp_standard

    home, ascend = directory / "torch_npu", directory / "ascend"
    (home / "lib").mkdir(parents=True, exist_ok=True)
    (ascend / "lib64").mkdir(parents=True, exist_ok=True)
    if not (home / "include").exists():
        os.symlink(include, home / "include")
    acl = ascend / "lib64" / "libascendcl.so"
    common = ["g++", _cpp_standard(), "-O1", "-fPIC", "-shared", "-w", f"-I{HERE}", f"-I{include}"]
    _run(
        [
            *common,
            *([] if capture else ["-DEMULATED_ACL_WITHOUT_CAPTURE"]),
            str(HERE / "emulated_acl.cpp"),
            "-o",
            str(acl),
        ]
    )
    torch_flags = [*(f"-I{path}" for path in include_paths()), *(f"-L{path}" for path in library_paths())]
    rpath = [f"-Wl,-rpath,{path}" for path in (*library_paths(), acl.parent)]
    _run(
        [
            *common,
            *torch_flags,
            str(HERE / "torch_npu_stub.cpp"),
            str(HERE / "torch_npu_capture_stub.cpp"),
            "-o",
            str(home / "lib" / "libtorch_npu.so"),
            f"-L{acl.parent}",
            "-lascendcl",
            "-lc10",
            "-ltorch_cpu",
            "-ldl",
            *rpath,
        ]
    )
    return EmulatedNpu(home, ascend)
