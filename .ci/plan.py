"""CI's plan: nox sessions grouped by torch release, one group a line: "MODE SESSION...". MODE: `alone` (no torch),
`line` (a core line's two tiers, using both cores), `parallel` (one-core work, two groups at a time)."""

from __future__ import annotations

import re
import sys

# rough seconds per session on a cold cache (a measured .ci/run, 2 cores): the one-core groups go longest first, so
# that the two running at a time end close together rather than one long group running alone at the end
SECONDS = {"tests": 50, "pair": 100, "quickstart": 110, "retire_oldest": 95}


def seconds(group: list[str]) -> int:
    return sum(SECONDS.get(session.split("(")[0], 60) for session in group)


def torch_of(session: str) -> str:
    found = re.findall(r"torch=.([0-9.]+)", session)
    return found[0] if found else ""


def plan(
    default: list[str], every_tests: list[str], every_pair: list[str], also: tuple[str, ...] | list[str] = ()
) -> list[tuple[str, list[str]]]:
    """A plain `nox`'s sessions (lint, typecheck, the core lines' two tiers, quickstart), then what it leaves out: the
    fast tier of every other torch line, the brief check of every torch_npu pair the core lines do not run, and
    ``also`` (each a group of its own, e.g. retire_oldest)."""
    lines: dict[str, list[str]] = {}
    for session in default:
        if torch_of(session):
            lines.setdefault(torch_of(session), []).append(session)
    others: dict[str, list[str]] = {}
    for session in every_tests + every_pair:
        if torch_of(session) not in lines:
            others.setdefault(torch_of(session), []).append(session)
    no_torch = [session for session in default if not torch_of(session) and session != "quickstart"]
    quickstart = [["quickstart"]] if "quickstart" in default else []  # the newest torch, freed after
    one_core = [*quickstart, *others.values(), *([session] for session in also)]
    return [
        *(("alone", [session]) for session in no_torch),
        *(("line", sessions) for sessions in lines.values()),
        *(("parallel", sessions) for sessions in sorted(one_core, key=seconds, reverse=True)),
    ]


if __name__ == "__main__":
    default, every_tests, every_pair, also = (argument.split() for argument in sys.argv[1:5])
    for mode, sessions in plan(default, every_tests, every_pair, also):
        print(mode, *sessions)
