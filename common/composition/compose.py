"""How a version module declares its line: ``LINE = line_spec(__name__, ADAPTERS, own_fixes=...)``, one call; its
fixes are the registry's shared records built with its adapters (fix_registry.py), then its own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.fix_registry import shared_fixes
from npu_inductor_compat.linespec import LineSpec, MalformedLineModule, check_spec
from npu_inductor_compat.patching import Patch


def check_adapters(module_name: str, adapters: object) -> LineAdapters:
    """``adapters`` as ``module_name``'s LineAdapters, or a MalformedLineModule naming each missing or wrong field."""
    names = [field.name for field in fields(LineAdapters)]
    if not isinstance(adapters, LineAdapters):
        missing = [name for name in names if not hasattr(adapters, name)]
        lacking = f"; it lacks {', '.join(missing)}" if missing else ""
        raise MalformedLineModule(
            f"{module_name}: adapters are a {type(adapters).__name__}, not a LineAdapters{lacking} "
            f"(common/composition/adapters.py; fields: {', '.join(names)})"
        )
    wrong = [
        f"{field.name} is {getattr(adapters, field.name)!r}, not callable"
        for field in fields(LineAdapters)
        if field.type.startswith("Callable") and not callable(getattr(adapters, field.name))
    ]
    if wrong:
        raise MalformedLineModule(f"{module_name}: adapters: {'; '.join(wrong)}")
    return adapters


def line_spec(module_name: str, adapters: LineAdapters, own_fixes: Iterable[Patch] = ()) -> LineSpec:
    """The LINE of the version module ``module_name`` (pass ``__name__``): the shared records built with
    ``adapters``, then ``own_fixes``. Checked here and when dispatch loads it."""
    checked = check_adapters(module_name, adapters)
    spec = LineSpec(name=module_name.rpartition(".")[2], adapters=checked, fixes=(*shared_fixes(checked), *own_fixes))
    return check_spec(module_name, spec)
