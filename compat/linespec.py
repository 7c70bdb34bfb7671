"""What a version module declares: one `LineSpec` as its ``LINE``, checked when the dispatcher loads it.

A version module (v*/__init__.py) builds it with one shared call (``common.composition.compose.line_spec``)."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from npu_inductor_compat.patching import Patch

HOW = (
    "a version module declares LINE = compose.line_spec(__name__, ADAPTERS, own_fixes=...)"
    " (common/composition/compose.py)"
)


class MalformedLineModule(TypeError):
    """A version module's declaration is missing or wrong; the message names the module and what is missing."""


@dataclass(frozen=True)
class Plan:
    """What a version module wants applied for one backend (the device and backend layers), in order."""

    backend: str | None
    layers: tuple[Patch, ...]
    # Things not done, with the reason (e.g. a provider package that is not installed).
    skipped: tuple[tuple[str, str], ...] = ()
    # Every layer record id this module knows, for validating NPU_INDUCTOR_COMPAT_DISABLE.
    known_ids: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LineSpec:
    """One torch line as its version module declares it: everything the dispatcher and activation use."""

    name: str  # the module's name in LINES ("v2_12")
    adapters: (
        Any  # the line's LineAdapters (common/composition/adapters.py): compat reads its ``line``, common the rest
    )
    fixes: tuple[Patch, ...]  # every fix record this line applies: the shared ones, then its own


def check_spec(module_name: str, spec: object) -> LineSpec:
    """``spec`` as ``module_name``'s LINE, or a MalformedLineModule naming the module and every problem."""
    where = f"{module_name}.LINE"
    if not isinstance(spec, LineSpec):
        raise MalformedLineModule(f"{where} is a {type(spec).__name__}, not a LineSpec; {HOW}")
    problems = []
    expected = module_name.rpartition(".")[2]
    if spec.name != expected:
        problems.append(f"name is {spec.name!r}, not {expected!r}")
    adapters_line = getattr(spec.adapters, "line", None)
    if adapters_line != expected:
        problems.append(f"adapters are for {adapters_line!r}, not {expected!r}")
    if not isinstance(spec.fixes, tuple):
        problems.append(f"fixes is a {type(spec.fixes).__name__}, not a tuple of Patch")
    else:
        problems += [
            f"fixes[{index}] is a {type(item).__name__}, not a Patch"
            for index, item in enumerate(spec.fixes)
            if not isinstance(item, Patch)
        ]
    if problems:
        raise MalformedLineModule(f"{where}: {'; '.join(problems)}; {HOW}")
    return spec


def line_spec(module: ModuleType) -> LineSpec:
    """A loaded version module's LINE, checked (MalformedLineModule when it has none or a malformed one)."""
    if not hasattr(module, "LINE"):
        raise MalformedLineModule(f"{module.__name__} declares no LINE; {HOW}")
    return check_spec(module.__name__, module.LINE)
