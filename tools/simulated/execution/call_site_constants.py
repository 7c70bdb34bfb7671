"""The values a C++ wrapper passes for a kernel's call-site constexprs (a dropout's `load_seed_offset` of 1, which
Triton specialises): the real binary has them compiled in, and the params saved for the wrapper do not carry them."""

# The first pass's launch compiled the kernel with the value its call passed (a Triton argument equal to 1 becomes a
# constant; torch_npu 2.7.1's codegen marks it "constexpr" in the signature). The C++ wrapper's calls of the kernel's
# launcher, `call_<kernel>(...)`, pass the same graph's values: they are read from there, by the launcher's own
# parameter names. Calls that disagree, or pass an expression, give no value (the device then names the argument).

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_INTEGER = re.compile(r"(-?\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)")
_BOOLEANS = {"true": True, "false": False}


def _arguments(text: str, start: int) -> tuple[list[str], int] | None:
    """The arguments of the call whose "(" is at ``start``, split at depth 0, and the index after its ")"."""
    depth = 0
    parts: list[str] = []
    current: list[str] = []
    for index in range(start + 1, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                parts.append("".join(current).strip())
                return [part for part in parts if part], index + 1
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    return None


def _literal(text: str) -> Any:
    found = _INTEGER.fullmatch(text)
    if found is not None:
        return int(found.group(1))
    return _BOOLEANS.get(text)


def call_site_values(source: str, kernel: str, names: Iterable[str]) -> dict[str, Any]:
    """``names`` -> the literal every call of ``kernel``'s launcher in ``source`` passes for it (if all agree)."""
    wanted = set(names)
    if not wanted:
        return {}
    parameters: list[str] | None = None
    calls: list[list[str]] = []
    for match in re.finditer(rf"\bcall_{re.escape(kernel)}\s*\(", source):
        found = _arguments(source, match.end() - 1)
        if found is None:
            continue
        arguments, end = found
        if re.search(r"\bvoid\s*$", source[max(0, match.start() - 40) : match.start()]):  # the launcher's definition
            parameters = [re.split(r"[\s&*]+", argument)[-1] for argument in arguments]
        elif source[end:].lstrip().startswith(";"):
            calls.append(arguments)
    if parameters is None:
        return {}
    values: dict[str, Any] = {}
    for name in wanted & set(parameters):
        position = parameters.index(name)
        seen = {_literal(call[position]) for call in calls if position < len(call)}
        if len(seen) == 1 and None not in seen:
            values[name] = seen.pop()
    return values


__all__ = ["call_site_values"]
