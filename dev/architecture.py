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
    """Module edges as (source room, target room): ``room`` is the import test's ``folder_of`` (a folder, or the
    roof: compat's orchestration); a module named only at run time and a room's edges to itself are left out."""
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
    """A mermaid flowchart of rooms: the line folders are one node, ``v*/``; a back edge is dashed, and so is an
    entry point edge (how the roof reaches the tools' commands), named as such."""

    def node(folder: str) -> str:
        return LINES_NODE if is_line(folder) else folder

    dashed = {(node(a), node(b)) for a, b in back_edges}
    loaded = {(node(a), node(b)) for a, b in plugins} - dashed
    solid = {(node(a), node(b)) for a, b in edges} - dashed - loaded
    out = ["```mermaid", "flowchart LR"]
    named: set[str] = set()

    def label(name: str) -> str:
        if name in named:
            return name
        named.add(name)
        return f'{name}["{LABELS.get(name, name + "/")}"]'

    for source in sorted({a for a, _ in solid}, key=_node_order):  # one line per source: a --> b & c
        targets = sorted((b for a, b in solid if a == source), key=_node_order)
        out.append(f"    {label(source)} --> {' & '.join(label(b) for b in targets)}")
    for a, b in sorted(loaded):
        out.append(f"    {label(a)} -. entry points .-> {label(b)}")
    for a, b in sorted(dashed):
        out.append(f"    {label(a)} -. back edge .-> {label(b)}")
    out.append("```")
    return "\n".join(out)


def _node_order(name: str) -> tuple[int, str]:
    order = ("tools", "roof", LINES_NODE, "common", "compat")
    return (order.index(name) if name in order else len(order), name)


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
    room = import_graph.folder_of
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
