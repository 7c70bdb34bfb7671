"""Each torch_npu release on PyPI and the exact torch its wheel's metadata requires: one table, read from the wheels.

tests/tools/wheel/test_pairs.py checks each row against the wheel's METADATA, and that PyPI has no release it misses."""

from __future__ import annotations

import email.parser
import re
from dataclasses import dataclass

# The releases covered: the newest build of each torch_npu line with a cp311 manylinux_2_28 x86_64 wheel, from the
# 2.7.1 line (the oldest torch this project supports) on. A line is torch_npu's X.Y.Z; its postN builds are rebuilds
# for the same torch. torch_npu publishes two 2.9 lines: 2.9.0.postN (for torch 2.9.0) and 2.9.1 (for torch 2.9.1).
OLDEST_LINE = "2.7.1"
# What a "+cpu" local label in a pin means: PyTorch's CPU-only build of that release (download.pytorch.org/whl/cpu).
# PyPI's torch of the same release is the same code (its Linux wheel also runs without CUDA), so the torch to install
# is the release without the label.
CPU_LABEL = "+cpu"
CPU_NOTE = "+cpu is PyTorch's CPU-build label: PyPI's torch {torch} is the same release"
ANY_PATCH_NOTE = "any {torch} patch (==X.*): the newest on PyPI is {torch}"


@dataclass(frozen=True)
class Pair:
    """One torch_npu release and the torch it is built for."""

    torch_npu: str  # the release, e.g. "2.9.0.post9"
    pin: str  # its wheel's Requires-Dist on torch, as written, e.g. "torch ==2.9.0+cpu"
    torch: str  # the torch release to install with it, e.g. "2.9.0"
    note: str

    @property
    def line(self) -> str:
        """torch_npu's line, its X.Y.Z: "2.9.0" for 2.9.0.post9."""
        found = re.match(r"\d+\.\d+\.\d+", self.torch_npu)
        assert found is not None, self.torch_npu
        return found.group(0)

    def refusal(self, torch_version: str) -> str:
        """Why this release does not run on ``torch_version`` (another torch than the one it requires), in a line."""
        return (
            f"torch_npu {self.torch_npu} requires torch {self.torch} (its metadata: {self.pin}); this is torch "
            f"{torch_version}: install torch=={self.torch} to run it"
        )


PAIRS: tuple[Pair, ...] = (
    Pair("2.7.1.post11", "torch==2.7.1+cpu", "2.7.1", CPU_NOTE.format(torch="2.7.1")),
    Pair("2.8.0.post5", "torch==2.8.0+cpu", "2.8.0", CPU_NOTE.format(torch="2.8.0")),
    Pair("2.9.0.post9", "torch ==2.9.0+cpu", "2.9.0", CPU_NOTE.format(torch="2.9.0") + "; not torch 2.9.1"),
    Pair(
        "2.9.1",
        "torch ==2.9.1+cpu",
        "2.9.1",
        CPU_NOTE.format(torch="2.9.1") + "; an older, smaller build than 2.9.0.post9",
    ),
    Pair("2.10.0.post7", "torch ==2.10.0+cpu", "2.10.0", CPU_NOTE.format(torch="2.10.0")),
    Pair("2.11.0.post3", "torch ==2.11.0+cpu", "2.11.0", CPU_NOTE.format(torch="2.11.0")),
    Pair("2.12.0.post3", "torch ==2.12.0", "2.12.0", "exact pin; not torch 2.12.1"),
    Pair("2.13.0", "torch==2.13.0.*", "2.13.0", ANY_PATCH_NOTE.format(torch="2.13.0")),
    Pair("2.14.0", "torch==2.14.0.*", "2.14.0", ANY_PATCH_NOTE.format(torch="2.14.0") + "; not torch 2.14.1"),
)


def pair(torch_npu: str) -> Pair:
    """The row of torch_npu release ``torch_npu``; ValueError naming the releases the table has."""
    for row in PAIRS:
        if row.torch_npu == torch_npu:
            return row
    raise ValueError(
        f"torch_npu {torch_npu} is not in the pairs table (tools/simulated/wheel/pairs.py): "
        f"{', '.join(row.torch_npu for row in PAIRS)}"
    )


def for_torch(torch_version: str) -> list[Pair]:
    """The rows whose torch is ``torch_version``'s release exactly (a local label such as +cpu is ignored)."""
    release = torch_version.split("+")[0]
    return [row for row in PAIRS if row.torch == release]


def minor(version: str) -> str:
    """ "2.9" for "2.9.0.post9", "2.9.1" or "2.9.1+cpu"."""
    return ".".join(version.split("+")[0].split(".")[:2])


def requires_torch(metadata: str) -> str:
    """The Requires-Dist on torch in a wheel's METADATA, as written; ValueError when it has none or several."""
    message = email.parser.Parser().parsestr(metadata, headersonly=True)
    found = [
        requirement.strip()
        for requirement in message.get_all("Requires-Dist") or []
        if re.match(r"torch\s*(?:[(=<>!~;\[]|$)", requirement.strip())
    ]
    if len(found) != 1:
        raise ValueError(f"{message.get('Name')} {message.get('Version')}: expected one torch requirement: {found}")
    return found[0]


def markdown() -> str:
    """The table as docs/torch-npu-survey.md shows it."""
    rows = ["| torch_npu | its metadata requires | install torch | note |", "| --- | --- | --- | --- |"]
    rows += [f"| {row.torch_npu} | `{row.pin}` | {row.torch} | {row.note} |" for row in PAIRS]
    return "\n".join(rows)
