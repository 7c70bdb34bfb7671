"""The tools' commands and fix providers, found by name in this package's entry points (pyproject.toml), so the
runtime's CLI never imports the tools: it loads the one a user names, when named."""

from __future__ import annotations

import importlib.metadata
from typing import Any

COMMANDS = "npu_inductor_compat.commands"  # `python -m npu_inductor_compat NAME ...`: callable(argv) -> exit code
FIX_PROVIDERS = "npu_inductor_compat.fix_providers"  # `fixes --provider NAME`: see compat/__main__.py
INSTALL = "reinstall this package with its tools, e.g. `pip install -e .` in its source tree"


class NotInstalled(ImportError):
    """A command or provider whose tools are not installed; the message names it and how to install them."""


def _registered(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    return {entry.name: entry for entry in importlib.metadata.entry_points(group=group)}


def names(group: str) -> list[str]:
    """The names registered in ``group``, sorted."""
    return sorted(_registered(group))


def unknown(group: str, name: str, what: str, built_in: tuple[str, ...] = ()) -> str:
    """Why ``name`` is not a ``what`` (command, provider): the valid names, and whether no tools are installed."""
    registered = names(group)
    valid = ", ".join(sorted({*built_in, *registered})) or "none"
    if not registered:
        why = f"no tools are installed (entry point group {group} is empty); {INSTALL}"
        return f"unknown {what} {name!r} (valid: {valid}): {why}"
    return f"unknown {what} {name!r}; valid: {valid}"


def load(group: str, name: str, what: str) -> Any:
    """The object registered as ``name`` in ``group`` (a KeyError for an unregistered name: ask ``unknown``).
    NotInstalled when the module it names is missing; any other import failure propagates unchanged."""
    entry = _registered(group)[name]
    try:
        return entry.load()
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if not (entry.module == missing or entry.module.startswith(f"{missing}.")):
            raise  # the tool's module is there and something it imports is not: the tool says what
        raise NotInstalled(
            f"the {what} {name!r} is registered but its tools are not installed (no module {missing}); {INSTALL}"
        ) from err
