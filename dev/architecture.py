"""The README's architecture picture: the package's import graph (import_graph.py) room by room, as mermaid.
`python dev/architecture.py [--write] README.md` prints the picture or rewrites the README's copy of it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import import_graph

START, END = "<!-- architecture:start -->", "<!-- architecture:end -->"
LINES_NODE = "lines"
LABELS = {LINES_NODE: "v*/", "roof": "compat/: roof"}  # a node's text, where it is not the folder's name


def is_line(folder: str) -> bool:
    return folder.startswith("v") and folder[1:2].isdigit()


def room_edges(graph: Mapping[str, Iterable[str]], room: Callable[[str], str | None]) -> set[tuple[str, str]]:
    """Module edges as (source room, target room): ``room`` maps a module to its room (sub_rooms: a folder, the roof,
    or a sub-package); a module named only at run time and a room's edges to itself are left out."""
    return {
        (here, there)
        for source, targets in graph.items()
        for target in targets
        if (here := room(source)) is not None and (there := room(target)) is not None and here != there
    }


def render(
    edges: Iterable[tuple[str, str]],
    back_edges: Iterable[tuple[str, str]] = (),
    plugins: Iterable[tuple[str, str]] = (),
) -> str:
    """A mermaid flowchart of rooms (a room: a path such as ``common/device``): the line folders are one node,
    ``v*/``; a back edge is dashed, and so is an entry point edge (how the roof reaches the tools' commands)."""

    rooms: dict[str, str] = {}  # node id -> its room (a path: "common/device")

    def node(room: str) -> str:
        name = LINES_NODE if is_line(room) else room.replace("/", "_")
        rooms[name] = room
        return name

    dashed = {(node(a), node(b)) for a, b in back_edges}
    loaded = {(node(a), node(b)) for a, b in plugins} - dashed
    solid = {(node(a), node(b)) for a, b in edges} - dashed - loaded
    out = ["```mermaid", "flowchart LR"]
    named: set[str] = set()

    def label(name: str) -> str:
        if name in named:
            return name
        named.add(name)
        return f'{name}["{LABELS.get(name, rooms[name] + "/")}"]'

    for source in sorted({a for a, _ in solid}, key=_node_order):  # one line per source: a --> b & c
        targets = sorted((b for a, b in solid if a == source), key=_node_order)
        out.append(f"    {label(source)} --> {' & '.join(label(b) for b in targets)}")
    for source in sorted({a for a, _ in loaded}, key=_node_order):
        targets = sorted((b for a, b in loaded if a == source), key=_node_order)
        out.append(f"    {label(source)} -. entry points .-> {' & '.join(label(b) for b in targets)}")
    for a, b in sorted(dashed):
        out.append(f"    {label(a)} -. back edge .-> {label(b)}")
    out.append("```")
    return "\n".join(out)


def _node_order(name: str) -> tuple[int, str]:
    order = ("tools", "roof", LINES_NODE, "common", "compat")
    room = name.split("_")[0]
    return (order.index(room) if room in order else len(order), name)


def sub_rooms(graph: Mapping[str, Iterable[str]]) -> Callable[[str], str | None]:
    """A module's room for the picture: the import test's folder (or the roof), and within common/ and tools/ the
    deepest sub-package it lives in, two levels at most ("common/device", "tools/simulated/npu")."""
    packages = {name.rpartition(".")[0] for name in graph}

    def room(name: str) -> str | None:
        folder = import_graph.folder_of(name)
        if folder not in ("common", "tools"):
            return folder
        parts = name.split(".")
        for depth in (4, 3):
            if len(parts) >= depth and ".".join(parts[:depth]) in packages:
                return "/".join(parts[1:depth])
        return folder

    return room


def embedded(readme: str) -> str:
    """The README's copy of the picture (between its markers); ValueError when it has none."""
    if START not in readme or END not in readme:
        raise ValueError(f"README has no {START} ... {END} block for the architecture picture")
    return readme.split(START, 1)[1].split(END, 1)[0].strip()


def with_picture(readme: str, picture: str) -> str:
    embedded(readme)  # the markers must be there
    head, rest = readme.split(START, 1)
    return f"{head}{START}\n{picture}\n{END}{rest.split(END, 1)[1]}"


def picture_of(root: Path) -> str:
    graph = import_graph.import_graph(root)
    plugins = import_graph.entry_point_edges(root)
    written = {source: {t for t in targets if (source, t) not in plugins} for source, targets in graph.items()}
    back = {source: {t for t in targets if import_graph.is_back_edge(source, t)} for source, targets in written.items()}
    loaded: dict[str, set[str]] = {}
    for source, target in plugins:
        loaded.setdefault(source, set()).add(target)
    room = sub_rooms(graph)
    return render(room_edges(written, room), room_edges(back, room), room_edges(loaded, room))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path, help="the README.md of the source tree")
    parser.add_argument("--write", action="store_true", help="rewrite the README's picture instead of printing it")
    args = parser.parse_args(argv)
    root = args.readme.resolve().parent
    picture = picture_of(root)
    if not args.write:
        print(picture)
        return 0
    args.readme.write_text(with_picture(args.readme.read_text(), picture))
    return 0


if __name__ == "__main__":
    sys.exit(main())
