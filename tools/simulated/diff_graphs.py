"""Which graph of one codegen output is which graph of another (by compile id where the split is the same, else by
the kernels a graph holds), and whether the two runs split the script into graphs the same way."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Graph = dict[str, Any]
Pair = tuple[str, Graph | None, Graph | None]
_NAME = re.compile(r"^(?P<stem>.*?)(?:_(?P<number>\d+))?$")


@dataclass(frozen=True)
class KernelName:
    """``triton_poi_fused_cos_mul_0``: stem ``triton_poi_fused_cos_mul``, number ``0``, kind ``triton_poi``, fused
    ops ``fused_cos_mul``."""

    stem: str
    number: str | None
    kind: str
    ops: str

    @classmethod
    def parse(cls, name: str) -> KernelName:
        found = _NAME.match(name)
        stem, number = (found["stem"], found["number"]) if found else (name, None)
        words = stem.split("_")
        size = 2 if words[0] == "triton" and len(words) > 2 else 1
        return cls(stem, number, "_".join(words[:size]), "_".join(words[size:]))


def _frame(graph: Graph) -> str | None:
    """The Dynamo frame a graph was compiled from (``"1/0"`` -> ``"1"``), None when unrecorded."""
    compile_id = graph.get("compile_id")
    return compile_id.split("/")[0] if isinstance(compile_id, str) and compile_id else None


def _shape(graphs: Sequence[Graph]) -> tuple[int, Counter[str]]:
    frames = {_frame(graph) for graph in graphs} - {None}
    return len(frames), Counter(str(graph.get("kind")) for graph in graphs)


def _describe(graphs: Sequence[Graph]) -> str:
    frames, kinds = _shape(graphs)
    by_kind = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return f"{len(graphs)} graph(s) from {frames} compiled frame(s) ({by_kind or 'none'})"


def split_change(a: Sequence[Graph], b: Sequence[Graph]) -> str | None:
    """One line when the two runs split the script into graphs differently (another count of compiled frames or of
    graphs of a kind: graph breaks moved), else None."""
    if _shape(a) == _shape(b):
        return None
    return (
        f"the graph split changed: A has {_describe(a)}, B has {_describe(b)}; graphs are paired by compile id, then "
        "by the kernels they hold, and the rest are only in A or only in B"
    )


def _structure(graph: Graph) -> tuple[str, tuple[str, ...]]:
    """A graph's kind and its kernels without their numbers (``triton_poi_fused_add_0`` -> ``triton_poi_fused_add``)."""
    kernels = graph.get("kernels")
    names = kernels if isinstance(kernels, list) else []
    return str(graph.get("kind")), tuple(sorted(KernelName.parse(str(name)).stem for name in names))


def match_graphs(
    a: Sequence[Graph],
    b: Sequence[Graph],
    by_position: Callable[[list[Graph], list[Graph]], list[Pair]],
    label: Callable[[str, Graph], str],
) -> list[Pair]:
    """(label, graph in A, graph in B) in A's order, then B's graphs without a match. Where both runs split the
    script alike: the same compile id and kind (and place among those), then the same kind and kernels, then what
    ``by_position`` pairs (kind and order, for outputs that recorded no compile id). Where the split changed, compile
    ids are renumbered (Dynamo numbers frames in compile order) and positions mean nothing: only graphs of the same
    kind and kernels pair. ``label(side, graph)`` names a graph; a pair not made by compile id says how."""
    pairs: dict[int, Graph] = {}  # index in A -> graph in B
    how: dict[int, str] = {}
    taken: set[int] = set()

    def keyed(graphs: Sequence[Graph]) -> dict[tuple[Any, ...], Graph]:
        seen: Counter[tuple[Any, ...]] = Counter()
        found = {}
        for graph in sorted(graphs, key=lambda graph: graph["index"]):
            if graph.get("compile_id"):
                key = (graph["compile_id"], graph.get("kind"))
                numbered = (*key, seen[key])
                found[numbered] = graph
                seen[key] += 1
        return found

    same_split = split_change(a, b) is None
    if same_split:  # Dynamo numbers frames in compile order: another split renumbers them
        ids_b = keyed(b)
        for key, graph in keyed(a).items():
            match = ids_b.get(key)
            if match is not None:
                pairs[graph["index"]], how[graph["index"]] = match, ""
                taken.add(match["index"])
    for graph in a:
        if graph["index"] in pairs:
            continue
        for candidate in b:
            if candidate["index"] not in taken and _structure(candidate) == _structure(graph):
                pairs[graph["index"]], how[graph["index"]] = candidate, "its kernels"
                taken.add(candidate["index"])
                break
    if same_split:
        left_a = [graph for graph in a if graph["index"] not in pairs]
        left_b = [graph for graph in b if graph["index"] not in taken]
        for _, left, match in by_position(left_a, left_b):
            if left is not None and match is not None:
                pairs[left["index"]], how[left["index"]] = match, "position"
                taken.add(match["index"])
    found: list[Pair] = []
    for graph in a:
        said = how.get(graph["index"], "")
        found.append((label("A", graph) + (f" (paired by {said})" if said else ""), graph, pairs.get(graph["index"])))
    found += [(label("B", graph), None, graph) for graph in b if graph["index"] not in taken]
    return found
