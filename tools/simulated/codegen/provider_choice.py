"""Who generates `codegen`'s npu code: torch_npu's own codegen (its wheel paired with this torch) by default, as on an
Ascend host; stock Inductor where no such pair runs here, or when ``--provider stock`` asks for it."""

from __future__ import annotations

import argparse
import importlib.util
from dataclasses import dataclass
from typing import Any

from npu_inductor_compat.tools.simulated.wheel import pairs, wheel_release

STOCK = "stock"
TORCH_NPU = wheel_release.PROVIDER_NAME  # "torch_npu-wheel"
PROVIDERS = (STOCK, TORCH_NPU)
# old --provider names -> the name to use now (simulated-npu: both providers run on the simulated NPU)
RENAMED = {"simulated-npu": STOCK}
WHAT = {STOCK: "stock Inductor's codegen", TORCH_NPU: "torch_npu's own codegen"}
# what torch_npu's pure-Python _inductor imports beyond torch (module -> the distribution to pip install)
PYTHON_DEPENDENCIES = {"yaml": "pyyaml", "psutil": "psutil"}


class ProviderUnavailable(ValueError):
    """``--provider torch_npu-wheel`` cannot run here: no torch_npu release pairs with this torch, or its Python
    dependencies are missing (the message says which, and what to install)."""


@dataclass(frozen=True)
class Choice:
    """The provider a run uses, and why."""

    provider: str  # one of PROVIDERS
    release: str | None  # the torch_npu release whose codegen runs (torch_npu-wheel only)
    requested: str | None  # what --provider said; None: the default chose
    why: str  # one line: why this provider
    note: str | None = None  # the one line said on stderr: the default fell back to stock

    def describe(self) -> str:
        """E.g. ``stock (stock Inductor's codegen; --provider stock)``."""
        what = f"torch_npu {self.release}'s own codegen" if self.release else WHAT[self.provider]
        return f"{self.provider} ({what}; {self.why})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.provider,
            "torch_npu": self.release,
            "chosen_by": "default" if self.requested is None else "--provider",
            "why": self.why,
        }


def parse(value: str) -> str:
    """``--provider``'s type: a valid name, or an error naming the valid ones (and the new name of an old one)."""
    if value in PROVIDERS:
        return value
    valid = f"valid: {STOCK} (stock Inductor), {TORCH_NPU} (torch_npu's own codegen, the default where its wheel is "
    valid += "paired with this torch)"
    if value in RENAMED:
        raise argparse.ArgumentTypeError(f"{value!r} is now called {RENAMED[value]!r}; {valid}")
    raise argparse.ArgumentTypeError(f"{value!r} is not a provider; {valid}")


def choose(torch_version: str, requested: str | None) -> Choice:
    """The provider for ``torch_version``: ``requested`` when given (torch_npu-wheel that cannot run here raises
    ProviderUnavailable saying why), else torch_npu-wheel where a pair runs, else stock with a note."""
    release = _release(torch_version)
    if requested == STOCK:
        return Choice(STOCK, None, STOCK, "--provider stock")
    if requested not in (None, TORCH_NPU):
        raise ValueError(f"--provider {requested!r}: valid: {', '.join(PROVIDERS)}")
    try:
        paired = wheel_release.paired_release(torch_version)
    except wheel_release.WheelUnavailable as err:
        if requested == TORCH_NPU:
            raise ProviderUnavailable(str(err)) from None
        why = f"the default: no torch_npu release runs on torch {release} here"
        return Choice(STOCK, None, None, why, note=no_pair_line(torch_version))
    missing = [PYTHON_DEPENDENCIES[name] for name in PYTHON_DEPENDENCIES if not _importable(name)]
    if missing:
        needs = f"torch_npu {paired}'s codegen imports {' and '.join(missing)}, not installed here"
        if requested == TORCH_NPU:
            raise ProviderUnavailable(f"{needs}: pip install {' '.join(missing)}")
        note = f"npu_inductor_compat codegen: stock Inductor generates the kernels: {needs}; pip install "
        note += f"{' '.join(missing)} for torch_npu's own codegen, the default on torch {release}"
        return Choice(STOCK, None, None, f"the default: {needs}", note=note)
    if requested == TORCH_NPU:
        return Choice(TORCH_NPU, paired, TORCH_NPU, f"--provider {TORCH_NPU}")
    return Choice(TORCH_NPU, paired, None, f"the default on torch {release}, the torch its wheel requires")


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def runnable() -> dict[str, str]:
    """torch release -> the torch_npu release whose codegen runs on it here (stubbed, and not held back)."""
    return {torch: npu for torch, npu in wheel_release.PAIRED.items() if npu not in wheel_release.NOT_YET}


def no_pair_line(torch_version: str) -> str:
    """One line: stock Inductor runs, why (no pair, or a pair that does not run here yet), and the torch and
    torch_npu release to install for torch_npu's own codegen."""
    release = _release(torch_version)
    pairs_here = runnable()
    why = f"no torch_npu release requires torch {release}"
    for row in pairs.for_torch(release):
        held = wheel_release.NOT_YET.get(row.torch_npu, "its native symbols are not stubbed yet")
        why = f"torch_npu {row.torch_npu}, made for torch {release}, does not run here ({held})"
    said = f"npu_inductor_compat codegen: stock Inductor generates the kernels: {why}"
    if not pairs_here:
        return said
    torch = _suggested(release, pairs_here)
    return f"{said}; for torch_npu's own codegen install torch=={torch} (torch_npu {pairs_here[torch]} requires it)"


def _release(torch_version: str) -> str:
    from npu_inductor_compat.version import parse_release

    return ".".join(map(str, parse_release(torch_version)))


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def _suggested(release: str, pairs_here: dict[str, str]) -> str:
    """The torch of a runnable pair to suggest: the same minor's, else the newest older one, else the oldest."""
    same = [torch for torch in pairs_here if pairs.minor(torch) == pairs.minor(release)]
    older = [torch for torch in pairs_here if _key(torch) < _key(release)]
    return max(same or older, key=_key) if same or older else min(pairs_here, key=_key)
