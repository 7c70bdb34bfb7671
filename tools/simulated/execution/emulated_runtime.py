"""The emulated NPU runtime a C++ wrapper links against and runs on: an ACL runtime emulation and a stub libtorch_npu,
built against the real ACL and torch_npu headers once per torch build, sources and headers, into the tools' cache."""

# emulated_acl{,_capture}.cpp emulate libascendcl (memory, streams, launches: device_launch.py; capture, events);
# torch_npu_stub.cpp, torch_npu_capture_stub.cpp and torch_npu_forward.cpp stand in for libtorch_npu (allocators,
# streams, task queue, capture status, C-shim ops; shim_forwarding.py generates the rest), each modelled on its source.
# Both libraries go into one lib/ (a torch_npu install's layout, ACL beside it): $NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME.

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from npu_inductor_compat.tools.simulated.execution import shim_forwarding

HERE = Path(__file__).resolve().parent
SOURCES = (
    "emulated_acl.h",
    "emulated_acl_state.h",
    "emulated_acl.cpp",
    "emulated_acl_capture.cpp",
    "torch_npu_stub.cpp",
    "torch_npu_caching_stub.cpp",
    "torch_npu_capture_stub.cpp",
    "torch_npu_forward.h",
    "torch_npu_forward.cpp",
    "shim_forwarding.py",  # generates the forwarded ops
)
LIST = "FILES"  # written last into a built entry (tools/cache_entry.py)
CACHE_DIR = "emulated_npu"  # beside the simulated NPU extension's builds
WITHOUT_CAPTURE = "-DEMULATED_ACL_WITHOUT_CAPTURE"  # an ACL from a CANN before aclgraph capture


@dataclass(frozen=True)
class EmulatedNpu:
    """A built runtime: ``torch_npu_home`` has include/ (a link to the real headers) and lib/ (both libraries);
    ``ascend_home`` is a CANN-like home whose lib64/ is that lib/."""

    torch_npu_home: Path
    ascend_home: Path

    @property
    def libascendcl(self) -> Path:
        return self.torch_npu_home / "lib" / "libascendcl.so"

    @property
    def libtorch_npu(self) -> Path:
        return self.torch_npu_home / "lib" / "libtorch_npu.so"

    def env(self) -> dict[str, str]:
        """The variables the package's build options for device "npu" read (common/fixes/cpp_wrapper_launch.py)."""
        return {
            "NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME": str(self.torch_npu_home),
            "ASCEND_HOME_PATH": str(self.ascend_home),
        }


class RuntimeUnavailable(RuntimeError):
    """The emulated runtime cannot be built here (the message says why)."""


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeUnavailable(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-6000:]}")


def _layout(folder: Path) -> EmulatedNpu:
    return EmulatedNpu(folder / "torch_npu", folder / "ascend")


def build(folder: Path, include: Path, *, capture: bool = True) -> EmulatedNpu:
    """Both libraries under ``folder`` (created), against torch's headers and ``include`` (a torch_npu wheel's, which
    carries CANN's ACL headers too); ``capture=False`` leaves aclmdlRICaptureGetInfo out of the ACL runtime."""
    from torch.utils.cpp_extension import include_paths, library_paths

    from npu_inductor_compat.tools.simulated.codegen.headers import _cpp_standard

    npu = _layout(folder)
    lib = npu.torch_npu_home / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    npu.ascend_home.mkdir(parents=True, exist_ok=True)
    if not (npu.torch_npu_home / "include").exists():
        os.symlink(include, npu.torch_npu_home / "include")
    if not (npu.ascend_home / "lib64").exists():
        os.symlink(os.path.join("..", "torch_npu", "lib"), npu.ascend_home / "lib64")
    common = ["g++", _cpp_standard(), "-O1", "-fPIC", "-shared", "-w", f"-I{HERE}", f"-I{include}"]
    acl = [str(HERE / "emulated_acl.cpp"), str(HERE / "emulated_acl_capture.cpp")]
    _run([*common, *([] if capture else [WITHOUT_CAPTURE]), *acl, "-o", str(npu.libascendcl)])
    torch_flags = [*(f"-I{path}" for path in include_paths()), *(f"-L{path}" for path in library_paths())]
    rpath = ["-Wl,-rpath,$ORIGIN", *(f"-Wl,-rpath,{path}" for path in library_paths())]  # relocatable: built aside
    # One translation unit for the parts that include ATen (its headers take ~10 s to parse, once): the stub, the
    # forwarding helpers and the ops generated from torch_npu's C shim that torch's CPU shim shares.
    by_hand = ("torch_npu_stub.cpp", "torch_npu_caching_stub.cpp", "torch_npu_forward.cpp")
    forwarded = folder / "torch_npu_ops.cpp"
    generated = shim_forwarding.source(
        include / shim_forwarding.NPU_HEADER, _cpu_shim_header(), tuple(HERE / name for name in by_hand)
    )
    declared = shim_forwarding.declarations((include / shim_forwarding.NPU_HEADER).read_text(), "npu")
    defines = "".join(f"#define EMULATED_TORCH_NPU_SHIM_{op} 1\n" for op in declared)  # what this release exports
    forwarded.write_text(defines + "".join(f'#include "{name}"\n' for name in by_hand) + generated)
    stubs = [str(forwarded), str(HERE / "torch_npu_capture_stub.cpp")]
    libraries = ["-lascendcl", "-lc10", "-ltorch_cpu", "-ldl"]
    _run([*common, *torch_flags, *stubs, "-o", str(npu.libtorch_npu), f"-L{lib}", *libraries, *rpath])
    # CANN's libruntime, which torch_npu's own C++ builder links every wrapper with (_inductor/cpp_builder.py
    # get_cpp_torch_device_options): empty, as nothing in a wrapper with this package's launch calls it (a call
    # would fail to link, naming the function)
    empty = folder / "empty.c"
    empty.write_text("/* nothing */\n")
    _run(["gcc", "-shared", "-fPIC", str(empty), "-o", str(lib / "libruntime.so")])
    empty.unlink()
    forwarded.unlink()
    return npu


def _cpu_shim_header() -> Path:
    from torch.utils.cpp_extension import include_paths

    for path in include_paths():
        if (Path(path) / shim_forwarding.CPU_HEADER).is_file():
            return Path(path) / shim_forwarding.CPU_HEADER
    raise RuntimeUnavailable(f"torch's {shim_forwarding.CPU_HEADER} is not among its include paths")


def _key(include: Path, capture: bool) -> str:
    from npu_inductor_compat.tools.simulated.npu.extension_build import _torch_build

    digest = hashlib.sha256()
    recipe = Path(__file__).read_bytes()  # how the sources are built and laid out
    parts = [*((HERE / name).read_bytes() for name in SOURCES), recipe, str(include.resolve()).encode()]
    parts.append(bytes([capture]))
    for part in (*parts, *(text.encode() for text in _torch_build())):
        digest.update(len(part).to_bytes(8, "little") + part)
    return digest.hexdigest()[:20]


def cached(include: Path, *, capture: bool = True, note: object = None) -> EmulatedNpu:
    """The runtime for this torch and ``include``, built once into the tools' cache (beside the simulated NPU
    extension's builds: $NPU_INDUCTOR_COMPAT_EXTENSION_CACHE moves both) and checked against its list on each use."""
    from npu_inductor_compat.tools import cache_entry
    from npu_inductor_compat.tools.simulated.npu.extension_build import CACHE_ENV, cache_root

    say = note if callable(note) else cache_entry.say
    target = cache_root().parent / CACHE_DIR / _key(include, capture)

    def make() -> None:
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            build(Path(scratch), include, capture=capture)
            cache_entry.write_list(Path(scratch), LIST, {"include": str(include)})
            os.replace(scratch, target)
            os.mkdir(scratch)  # TemporaryDirectory removes its (now moved) directory on exit

    try:
        cache_entry.ensure(
            target,
            "the emulated NPU runtime",
            lambda: cache_entry.damage(target, LIST),
            make,
            say,
            f"set {CACHE_ENV} to move the cache",
        )
    except cache_entry.CacheUnusable as err:
        raise RuntimeUnavailable(str(err)) from None
    return _layout(target)
