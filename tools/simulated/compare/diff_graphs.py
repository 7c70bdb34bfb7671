"""Which graph of one codegen output is which graph of another (by compile id where the split is the same, else by
the kernels a graph holds), and whether the two runs split the script alike; which kernel of a pair is which."""

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


def _pair(a: Sequence[Graph], b: Sequence[Graph], label: Callable[[str, Graph], str]) -> list[Pair]:
    """(label, graph in A, graph in B) in A's order, then B's graphs without a match. Where both runs split the
    script alike: the same compile id and kind (and place among those), then the same kind and kernels, then what
    ``_by_position`` pairs (kind and order, for outputs that recorded no compile id). Where the split changed, compile
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
        for _, left, match in _by_position(left_a, left_b):
            if left is not None and match is not None:
                pairs[left["index"]], how[left["index"]] = match, "position"
                taken.add(match["index"])
    found: list[Pair] = []
    for graph in a:
        said = how.get(graph["index"], "")
        found.append((label("A", graph) + (f" (paired by {said})" if said else ""), graph, pairs.get(graph["index"])))
    found += [(label("B", graph), None, graph) for graph in b if graph["index"] not in taken]
    return found


def graph_keys(graphs: Sequence[Graph]) -> dict[tuple[Any, ...], Graph]:
    """Each graph's identity across runs: its kind and its position among graphs of that kind; a backward graph's,
    the identity of its forward graph and its position among that forward's backward graphs."""
    keys: dict[tuple[Any, ...], Graph] = {}
    own: dict[int, tuple[Any, ...]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for graph in sorted(graphs, key=lambda graph: graph["index"]):
        if graph["kind"] == "backward":
            forward = graph.get("forward")
            group: tuple[Any, ...] = ("backward", own.get(forward) if isinstance(forward, int) else None)
        else:
            group = (graph["kind"],)
        position = counts.get(group, 0)
        counts[group] = position + 1
        key = (*group, position)
        keys[key] = graph
        own[graph["index"]] = key
    return keys


def _label(key: tuple[Any, ...]) -> str:
    if key[0] == "backward" and key[1] is not None:
        return f"backward{f' #{key[2]}' if key[2] else ''} of {_label(key[1])}"  # one backward per forward, usually
    return f"{key[0]} #{key[-1]}"


def _by_position(a: Sequence[Graph], b: Sequence[Graph]) -> list[tuple[str, Graph | None, Graph | None]]:
    """(label, graph in A, graph in B): the same kind and place among that kind (graph_keys)."""
    keys_a, keys_b = graph_keys(a), graph_keys(b)
    pairs: list[tuple[str, Graph | None, Graph | None]]
    pairs = [(_label(key), graph, keys_b.get(key)) for key, graph in keys_a.items()]
    pairs += [(_label(key), None, graph) for key, graph in keys_b.items() if key not in keys_a]
    return pairs


def match_graphs(a: Sequence[Graph], b: Sequence[Graph]) -> list[tuple[str, Graph | None, Graph | None]]:
    """(label, graph in A, graph in B) in A's order, then B's graphs that have no match (by compile id, then by
    kernels, then by position where the split is unchanged: ``_pair``); each graph labelled by its place in its run."""
    labels = {("A", graph["index"]): _label(key) for key, graph in graph_keys(a).items()}
    labels |= {("B", graph["index"]): _label(key) for key, graph in graph_keys(b).items()}
    return _pair(a, b, lambda side, graph: labels[(side, graph["index"])])


def match_kernels(
    names_a: Sequence[str], names_b: Sequence[str], own_text: Callable[[str, str], str]
) -> list[tuple[str, str, str]]:
    """(A's name, B's name, rule) for the kernels of two paired graphs, in A's order; the first rule that pairs wins:

    1. ``name``: the same name;
    2. ``numbering``: the same name up to its numeric suffix (``triton_poi_fused_add_0`` / ``triton_poi_fused_add_1``:
       another kernel was defined before it), in definition order;
    3. ``content``: the same normalised source once each kernel's own name is set aside (``own_text(side, name)``),
       a pure rename;
    4. ``position``: the same kind (``triton_poi``, ``triton_per``, ``triton_red``, ``triton_tem``, ...) and numeric
       suffix: Inductor numbers a graph's kernels in definition order and names each after the ops it fuses, so when
       torch fuses or names ops differently (2.7.1's ``triton_poi_fused_cos_mul_0`` is 2.12.1's
       ``triton_poi_fused_cos_expand_mul_threshold_backward_unsqueeze_0``) the position is what identifies it;
       then the same fused ops and suffix with another kind (a persistent reduction that became a looped one).

    Not by a similarity score: a changed kernel is exactly where contents differ, and scores make pairings nobody
    can predict; these rules are what Inductor's naming guarantees. What is left is removed or added."""
    left_a, left_b = list(names_a), list(names_b)
    pairs: list[tuple[str, str, str]] = []

    def pair(rule: str, same: Callable[[str, str], bool]) -> None:
        for name_a in list(left_a):
            for name_b in left_b:
                if same(name_a, name_b):
                    pairs.append((name_a, name_b, rule))
                    left_a.remove(name_a)
                    left_b.remove(name_b)
                    break

    def same_number_and(part: str) -> Callable[[str, str], bool]:
        def same(x: str, y: str) -> bool:
            a, b = KernelName.parse(x), KernelName.parse(y)
            return a.number is not None and a.number == b.number and getattr(a, part) == getattr(b, part)

        return same

    pair("name", lambda x, y: x == y)
    pair("numbering", lambda x, y: KernelName.parse(x).stem == KernelName.parse(y).stem)
    pair("content", lambda x, y: own_text("a", x) == own_text("b", y))
    pair("position", same_number_and("kind"))
    pair("position", same_number_and("ops"))
    order = {name: i for i, name in enumerate(names_a)}
    return sorted(pairs, key=lambda item: order[item[0]])
