"""The one registry of the fix records every line applies: each module of common/fixes/, in apply order, and its
records for a line. Adding a fix is a new module there and its test; no list names it."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.patching import Patch

PACKAGE = "npu_inductor_compat.common.fixes"
HOW = "a fix module declares FIXES (a tuple of Patch) or line_fixes(adapters) -> tuple of Patch (common/fixes/)"


class FixDeclarationError(TypeError):
    """A module of common/fixes/ declares no records, a wrong one, or an order that cannot hold; the message says
    which module and what is wrong."""


def apply_order(after: dict[str, tuple[str, ...]]) -> list[str]:
    """Module names by name, each after the modules its ``AFTER`` names (a module that changes a target another
    changes too states which goes first); FixDeclarationError for an unknown name or a cycle."""
    for name, before in sorted(after.items()):
        unknown = [other for other in before if other not in after]
        if unknown:
            raise FixDeclarationError(f"{PACKAGE}.{name}: AFTER names {unknown}, not modules of {PACKAGE}")
    order: list[str] = []
    waiting = dict(after)
    while waiting:
        ready = [name for name in sorted(waiting) if all(other in order for other in waiting[name])]
        if not ready:
            raise FixDeclarationError(f"{PACKAGE}: AFTER forms a cycle among {sorted(waiting)}")
        order.append(ready[0])
        del waiting[ready[0]]
    return order


def _after(module: ModuleType) -> tuple[str, ...]:
    return tuple(getattr(module, "AFTER", ()))


def _name(module: ModuleType) -> str:
    return module.__name__.rpartition(".")[2]


def fix_modules() -> tuple[ModuleType, ...]:
    """Every module of common/fixes/, imported, in apply order."""
    package = importlib.import_module(PACKAGE)
    names = [info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_")]
    modules = {name: importlib.import_module(f"{PACKAGE}.{name}") for name in names}
    order = apply_order({name: _after(module) for name, module in modules.items()})
    return tuple(modules[name] for name in order)


def records_of(module: ModuleType, adapters: LineAdapters) -> tuple[Patch, ...]:
    """A fix module's records for the line whose ``adapters`` are given: ``line_fixes(adapters)``, else ``FIXES``."""
    if hasattr(module, "line_fixes"):
        records = tuple(module.line_fixes(adapters))
    elif hasattr(module, "FIXES"):
        records = tuple(module.FIXES)
    else:
        raise FixDeclarationError(f"{module.__name__} declares no records; {HOW}")
    wrong = [
        f"{type(record).__name__} at {index}" for index, record in enumerate(records) if not isinstance(record, Patch)
    ]
    if wrong or not records:
        raise FixDeclarationError(f"{module.__name__}: {', '.join(wrong) or 'no records'}; {HOW}")
    return records


def _ordered(first: str, second: str, after: dict[str, tuple[str, ...]]) -> bool:
    """Whether ``second`` comes after ``first`` by AFTER, directly or through others."""
    seen, stack = set(), [second]
    while stack:
        name = stack.pop()
        if name == first:
            return True
        if name not in seen:
            seen.add(name)
            stack.extend(after.get(name, ()))
    return False


def shared_fixes(adapters: LineAdapters) -> tuple[Patch, ...]:
    """Every fix module's records for this line, in apply order. Two modules whose records change one target must
    be ordered by AFTER (the later one's change wraps the earlier's): FixDeclarationError naming both otherwise."""
    modules = fix_modules()
    found = [(_name(module), records_of(module, adapters)) for module in modules]
    after = {_name(module): _after(module) for module in modules}
    owner: dict[str, str] = {}
    for name, records in found:
        for target in {target for record in records for target in record.targets}:
            other = owner.setdefault(target, name)
            if other != name and not _ordered(other, name, after):
                raise FixDeclarationError(
                    f"{PACKAGE}.{name} and {PACKAGE}.{other} both change {target}: the one applied last must say "
                    f"so (AFTER = ({other!r},) in {name}), so the order their changes nest in is declared"
                )
    return tuple(record for _, records in found for record in records)
