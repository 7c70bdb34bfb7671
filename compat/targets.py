"""The one reader of ``"package.module:Qual.name"`` strings (``pkgutil.resolve_name``'s colon form): parse, import,
walk with getattr. Every failure names the string: ValueError (malformed), ImportError or AttributeError (missing)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

FORM = "'package.module:Attribute.path'"


class TargetModuleMissing(ImportError):
    """A target's module cannot be imported; the message names the target and the module."""


class TargetAttributeMissing(AttributeError):
    """A target's module imports but a name on its path does not exist; the message names both."""


@dataclass(frozen=True)
class Target:
    """A parsed target: ``module`` (imported) and ``qualname`` (walked with getattr; empty: the module itself)."""

    module: str
    qualname: str = ""

    @classmethod
    def parse(cls, text: str, *, attribute: bool = True) -> Target:
        """``text`` split at its ``:``; ValueError naming it when the module (or, if ``attribute``, the name) is
        missing. Without ``attribute``, a bare ``"package.module"`` is the module itself."""
        module, colon, qualname = text.partition(":")
        parts = qualname.split(".") if qualname else []
        if not module or (attribute and not qualname) or (colon and not qualname) or not all(parts):
            form = FORM if attribute else f"{FORM} or 'package.module'"
            raise ValueError(f"target {text!r} must look like {form}")
        return cls(module, qualname)

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}" if self.qualname else self.module

    @property
    def name(self) -> str:
        """The last name of the path (the module's last part for a module target)."""
        return self.qualname.rpartition(".")[2] if self.qualname else self.module.rpartition(".")[2]

    def import_module(self) -> Any:
        try:
            return importlib.import_module(self.module)
        except ImportError as err:
            raise TargetModuleMissing(f"target {str(self)!r}: cannot import module {self.module!r} ({err})") from err

    def owner(self) -> tuple[Any, str]:
        """(the object holding the last name, that name): everything but the last getattr, so a caller can ask
        whether the name exists, or set it."""
        if not self.qualname:
            raise ValueError(f"target {str(self)!r} names a module, not an attribute: it has no owner")
        *path, last = self.qualname.split(".")
        return self._walk(path), last

    def resolve(self) -> Any:
        """The object the target names."""
        return self._walk(self.qualname.split(".") if self.qualname else [])

    def _walk(self, path: list[str]) -> Any:
        found: Any = self.import_module()
        walked = self.module
        for part in path:
            walked += f".{part}" if walked != self.module else f":{part}"
            try:
                found = getattr(found, part)
            except AttributeError:
                raise TargetAttributeMissing(f"target {str(self)!r}: {walked} does not exist") from None
        return found


def resolve(text: str) -> Any:
    """The object ``"package.module:Qual.name"`` (or ``"package.module"``) names."""
    return Target.parse(text, attribute=False).resolve()
