"""The version oracle: what torch (and torch_npu, triton) is installed, read once and mapped to a release."""

# Policy for unusual builds: a pre-release, dev, post or local build is treated as the release it leads to or
# belongs to (``2.9.0a0+git1234abc`` → 2.9.0, ``2.12.0.dev20260101`` → 2.12.0, ``2.7.1+cpu`` → 2.7.1). Builds that
# lie about themselves can be overridden with ``NPU_INDUCTOR_COMPAT_TORCH_VERSION``.

from __future__ import annotations

import importlib.metadata
import os
import sys
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

TORCH_VERSION_ENV = "NPU_INDUCTOR_COMPAT_TORCH_VERSION"

Release = tuple[int, int, int]


@dataclass(frozen=True)
class TorchVersion:
    """A torch version string and the release it is treated as."""

    text: str
    release: Release
    source: str  # where the text came from: "torch.__version__", "package metadata", the env var, or "argument"

    @property
    def release_text(self) -> str:
        return ".".join(map(str, self.release))

    @property
    def mapped(self) -> bool:
        """True when the build is not the plain release (pre-release, dev, post or local build)."""
        return self.text != self.release_text


def parse_release(text: str) -> Release:
    """Map a version string to the (major, minor, micro) release it belongs to.

    Raises ValueError quoting the string when it is not a version.
    """
    if not isinstance(text, str):
        raise ValueError(f"a torch version must be a string like '2.9.1', got {text!r} ({type(text).__name__})")
    cleaned = text.strip()
    try:
        parsed = Version(cleaned)
    except InvalidVersion:
        raise ValueError(
            f"cannot read torch version {text!r}: expected a PEP 440 version such as '2.9.1', "
            f"'2.9.0a0+git1234abc', '2.12.0.dev20260101' or '2.7.1+cpu'"
        ) from None
    if parsed.epoch != 0:
        raise ValueError(f"cannot read torch version {text!r}: version epochs are not used by torch")
    parts = (*parsed.release, 0, 0)[:3]
    return (parts[0], parts[1], parts[2])


def _installed_torch_text() -> tuple[str, str]:
    # torch.__version__ is the truth when torch is already imported (source builds may carry no metadata);
    # otherwise the package metadata answers without paying for `import torch`.
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    if version is not None:
        return str(version), "torch.__version__"
    try:
        return importlib.metadata.version("torch"), "package metadata"
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "npu_inductor_compat needs torch, which is not installed (pip install 'torch>=2.7.1')"
        ) from None


def torch_version(text: str | None = None) -> TorchVersion:
    """The torch version to dispatch on: ``text`` if given, else the env override, else the installed torch."""
    if text is not None:
        return TorchVersion(text, parse_release(text), "argument")
    override = os.environ.get(TORCH_VERSION_ENV)
    if override:
        try:
            return TorchVersion(override, parse_release(override), TORCH_VERSION_ENV)
        except ValueError as err:
            raise ValueError(f"{TORCH_VERSION_ENV}: {err}") from None
    return installed_torch()


def installed_torch() -> TorchVersion:
    """The installed torch's version, whatever the override says (ImportError without torch, ValueError when its
    version string is not a version)."""
    found, source = _installed_torch_text()
    return TorchVersion(found, parse_release(found), source)


# Distribution names differ from import names; several names exist for the same project.
_DISTRIBUTIONS = {
    "torch": ("torch",),
    "torch_npu": ("torch_npu", "torch-npu"),
    "triton": ("triton", "pytorch-triton"),
    "triton_ascend": ("triton-ascend", "triton_ascend"),
}


def installed_versions() -> dict[str, str | None]:
    """Versions of torch and the optional NPU stack, from package metadata (nothing is imported)."""
    found: dict[str, str | None] = {}
    for key, names in _DISTRIBUTIONS.items():
        found[key] = None
        for name in names:
            try:
                found[key] = importlib.metadata.version(name)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__version__", None):
        found["torch"] = str(torch.__version__)
    return found
