"""Whether a replacement can be called every way the callable it replaces can: the journal's check before a record
wraps an upstream function whose signature may have drifted (torch 2.13 gave use_two_step_variance a 4th argument)."""

from __future__ import annotations

import inspect
from typing import Any

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_BY_NAME = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)


def _routine(value: Any) -> Any:
    """The function behind a staticmethod/classmethod object; None for anything that is not a function or method
    (classes, properties, lists...: the journal checks only callables it can read a signature from)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return value if inspect.isroutine(value) else None


def signature_of(value: Any, *, follow_wrapped: bool) -> inspect.Signature | None:
    """The signature of a function or method as stored on its owner, or None (not a routine, or a builtin without
    one). A replacement is read with ``follow_wrapped=False``: ours carry ``__wrapped__``, which inspect would follow
    to the original and so compare the original with itself."""
    routine = _routine(value)
    if routine is None:
        return None
    try:
        return inspect.signature(routine, follow_wrapped=follow_wrapped)
    except (TypeError, ValueError):
        return None


def _needs(parameter: inspect.Parameter) -> bool:
    return parameter.default is _P.empty and parameter.kind not in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)


def incompatibility(original: inspect.Signature, replacement: inspect.Signature) -> str | None:
    """Why some call the original accepts would fail on the replacement, or None when every one binds: each
    positional slot by position, each keyword-able parameter by name, each default kept, nothing new required."""
    theirs = list(original.parameters.values())
    ours = list(replacement.parameters.values())
    our_positional = [p for p in ours if p.kind in _POSITIONAL]
    our_named = {p.name: p for p in ours if p.kind in _BY_NAME}
    our_star_args = any(p.kind is _P.VAR_POSITIONAL for p in ours)
    our_star_kwargs = any(p.kind is _P.VAR_KEYWORD for p in ours)
    matched: set[str] = set()
    position = 0
    for parameter in theirs:
        name = repr(parameter.name)
        if parameter.kind is _P.VAR_POSITIONAL and not our_star_args:
            return f"the original takes *{parameter.name}; the replacement has no *args"
        if parameter.kind is _P.VAR_KEYWORD and not our_star_kwargs:
            return f"the original takes **{parameter.name}; the replacement has no **kwargs"
        if parameter.kind in _POSITIONAL:
            slot = our_positional[position] if position < len(our_positional) else None
            position += 1
            if slot is None and not our_star_args:
                return f"parameter {name} (position {position}) is missing: the replacement takes fewer arguments"
            if slot is not None:
                matched.add(slot.name)
                if parameter.kind is _P.POSITIONAL_OR_KEYWORD and slot.name != parameter.name:
                    return f"parameter {name} (position {position}) is called {slot.name!r} in the replacement"
                if parameter.default is not _P.empty and slot.default is _P.empty:
                    return f"parameter {name} has a default in the original, none in the replacement"
        if parameter.kind in _BY_NAME:
            same = our_named.get(parameter.name)
            if same is None and not our_star_kwargs:
                return f"parameter {name} is missing: the replacement cannot take it by name"
            if same is not None:
                matched.add(same.name)
                if parameter.default is not _P.empty and same.default is _P.empty:
                    return f"parameter {name} has a default in the original, none in the replacement"
    extra = [p.name for p in ours if _needs(p) and p.name not in matched]
    if extra:
        return f"the replacement requires {extra[0]!r}, which the original does not have"
    return None


def replacement_refusal(original: Any, replacement: Any) -> str | None:
    """For a replacement of a function or method: why it cannot stand in for ``original`` as installed (naming the
    parameter and both signatures), or None when it can, or when either has no readable signature."""
    if replacement is original:
        return None
    theirs = signature_of(original, follow_wrapped=True)
    ours = signature_of(replacement, follow_wrapped=False)
    if theirs is None or ours is None:
        return None
    reason = incompatibility(theirs, ours)
    if reason is None:
        return None
    return f"{reason} (original {theirs}, replacement {ours}); a wrapper should forward *args, **kwargs"
