"""The import graph, read from the source: imports point one way (no back edge) and no modules import each other."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "npu_inductor_compat"
LINE_PREFIX = "v"  # a version module's folder: v2_7_1, v2_9, ... (LINES names them)

# Calls whose first argument, a string literal, names a module (or a "module:Qual.name" target) to import.
IMPORTING_CALLS = ("import_module", "__import__", "resolve", "parse")
# Any string literal of this package's "module:Qual.name" form names a target to import, wherever it is passed.
TARGET = re.compile(rf"{PACKAGE}(?:\.\w+)*:\w+(?:\.\w+)*")

# Cycles that exist today and may only shrink: each is a set of modules that import each other. A cycle not
# contained in one of these fails the test, and so does an entry that is no longer exactly a cycle (shrink it).
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()


def folder_packages(root: Path) -> dict[str, str]:
    """Source folder -> import name (pyproject's package-dir: compat is the package itself)."""
    folders = [path.name for path in root.iterdir() if (path / "__init__.py").is_file()]
    return {folder: PACKAGE if folder == "compat" else f"{PACKAGE}.{folder}" for folder in folders}


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package, by import name."""
    found = {}
    for folder, package in folder_packages(root).items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _named(node: ast.Call) -> str | None:
    """The module a call like ``importlib.import_module("x")`` or ``targets.resolve("x:y")`` names, if literal;
    an f-string's constant prefix followed by ``<dynamic>``."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called not in IMPORTING_CALLS or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        text = first.value.partition(":")[0]
    elif isinstance(first, ast.JoinedStr):
        text = "".join(v.value for v in first.values if isinstance(v, ast.Constant)) + "<dynamic>"
    else:
        return None
    return text if text.startswith(PACKAGE) else None


def imported_names(path: Path, module: str) -> Iterator[str]:
    """What a module imports: import statements anywhere (function bodies and TYPE_CHECKING blocks included),
    relative ones resolved, the modules named by string literals in IMPORTING_CALLS and by target strings."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # ``from a import b``: the module a.b, else (b is an attribute) a; see import_graph
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and (named := _named(node)) is not None:
            yield named
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and TARGET.fullmatch(node.value):
            yield node.value.partition(":")[0]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: each name is the longest module it starts with (``from a import
    b`` is an edge to ``a.b`` when that is a module, else to ``a``); a dynamic name stays as written. A package's
    ``__init__`` that Python runs before any submodule is not an edge: only what is imported from it."""
    files = module_files(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges = set()
        for name in imported_names(path, module):
            if not name.startswith(PACKAGE):
                continue
            if name.endswith("<dynamic>"):
                edges.add(name)
                continue
            parts = name.split(".")
            for size in range(len(parts), 0, -1):
                candidate = ".".join(parts[:size])
                if candidate in files:
                    break
            else:
                continue  # the package's name alone: nothing is imported by it
            if candidate != module and not module.startswith(f"{candidate}."):  # its own package ran first
                edges.add(candidate)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The sets of modules that import each other (strongly connected components of more than one module, or one
    importing itself), Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.add(member)
                        if member == node:
                            break
                    if len(members) > 1 or node in graph[node]:
                        found.append(frozenset(members))
    return sorted(found, key=sorted)


def cycle_path(graph: dict[str, set[str]], members: frozenset[str]) -> list[str]:
    """One concrete cycle through a component, for the message: a -> b -> ... -> a."""
    start = min(members)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return [start]


def folder_of(name: str) -> str | None:
    """The source folder a module name lives in (``compat`` for the package's own modules); None for a dynamic name
    whose folder part is not written out (``f"npu_inductor_compat.{line}"``: how dispatch reaches the lines)."""
    parts = name.split(".")
    if len(parts) == 1:
        return "compat"
    if "<dynamic>" in parts[1]:
        return None
    return parts[1] if parts[1] in ("common", "tools") or _is_line(parts[1]) else "compat"


def _is_line(folder: str | None) -> bool:
    return folder is not None and folder.startswith(LINE_PREFIX) and folder[1:2].isdigit()


def is_back_edge(source: str, target: str) -> bool:
    """compat imports no common, line module or tool; common no line module or tool; a line module no other line
    module and no tool. Tools may import anything."""
    here, there = folder_of(source), folder_of(target)
    if there is None or here == there or here == "tools":
        return False
    if here == "compat":
        return there in ("common", "tools") or _is_line(there)
    if here == "common":
        return there == "tools" or _is_line(there)
    return _is_line(here) and (there == "tools" or _is_line(there))


def back_edge_problems(graph: dict[str, set[str]]) -> list[str]:
    """Every back edge, none allowed: the CLI reaches the tools' commands through entry points (pyproject.toml)."""
    return [
        f"{source} imports {target}"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if is_back_edge(source, target)
    ]


def cycle_problems(graph: dict[str, set[str]], known: tuple[frozenset[str], ...]) -> list[str]:
    """Each cycle not inside a known one, as a path; each known cycle that is no longer exactly a cycle."""
    found = cycles(graph)
    problems = [
        "import cycle: " + " -> ".join(cycle_path(graph, members))
        for members in found
        if not any(members <= allowed for allowed in known)
    ]
    problems += [
        f"known cycle {sorted(allowed)} is now {sorted(now) if now else 'gone'}: shrink KNOWN_CYCLES to match"
        for allowed in known
        if (now := next((members for members in found if members <= allowed), None)) != allowed
    ]
    return problems


@pytest.mark.once
def test_imports_point_one_way() -> None:
    """v* -> common -> compat, tools -> the runtime: no back edge, with importlib strings and local imports read."""
    assert back_edge_problems(import_graph(ROOT)) == []


@pytest.mark.once
def test_no_import_cycles_beyond_the_known_ones() -> None:
    assert cycle_problems(import_graph(ROOT), KNOWN_CYCLES) == []


# Edges cut out of the simulated NPU's cycle (issue #26), and one the cut relies on staying out: each group, put
# back, makes a cycle again. The clients of the kernel workers import no worker (each runs as `python -m`).
CUT_EDGES: dict[str, tuple[tuple[str, str], ...]] = {
    "device raises through not_simulated, not the stand-in": (("device", "standin"),),
    "torch_npu_wheel's TTIR-check record and the lowering worker's environment were in one module": (
        ("torch_npu_wheel", "kernel_check"),
        ("kernel_check", "torch_npu_wheel"),
    ),
    "the TTIR check's client imports no worker": (("ttir_check", "ttir_check_worker"),),
    "the stand-in reaches the wheel's depth (wheel_depth), not the provider that reads the active stand-in": (
        ("standin", "torch_npu_wheel"),
    ),
}


@functools.cache
def _graph_of_this_tree() -> dict[str, frozenset[str]]:
    return {module: frozenset(targets) for module, targets in import_graph(ROOT).items()}


@pytest.mark.once
@pytest.mark.parametrize("why", list(CUT_EDGES))
def test_a_cut_edge_put_back_is_a_cycle_again(why: str) -> None:
    graph = {module: set(targets) for module, targets in _graph_of_this_tree().items()}  # a copy to add to
    edges = [tuple(f"{PACKAGE}.tools.simulated.{name}" for name in edge) for edge in CUT_EDGES[why]]
    assert not any(target in graph[source] for source, target in edges)
    for source, target in edges:
        graph[source].add(target)
    members = {name for edge in edges for name in edge}
    assert any(members <= cycle and cycle not in KNOWN_CYCLES for cycle in cycles(graph))
    assert cycle_problems(graph, KNOWN_CYCLES)  # and the dependency test fails


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.once
def test_an_injected_cycle_fails_naming_its_path(tmp_path: Path) -> None:
    """A cycle hidden in a function body, an importlib string and a TYPE_CHECKING block is still a cycle."""
    root = _tree(
        tmp_path,
        {
            "compat/__init__.py": "",
            "compat/a.py": "def f():\n    from npu_inductor_compat import b\n",
            "compat/b.py": 'import importlib\nimportlib.import_module("npu_inductor_compat.c")\n',
            "compat/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
            "compat/d.py": "from npu_inductor_compat import a, __version__\n",
        },
    )
    graph = import_graph(root)
    assert graph["npu_inductor_compat.d"] == {"npu_inductor_compat.a"}  # the package itself ran first: no edge
    problems = cycle_problems(graph, ())
    assert problems == [
        "import cycle: npu_inductor_compat.a -> npu_inductor_compat.b -> npu_inductor_compat.c -> npu_inductor_compat.a"
    ]
    assert (
        cycle_problems(graph, (frozenset({"npu_inductor_compat.a", "npu_inductor_compat.b", "npu_inductor_compat.c"}),))
        == []
    )
    wider = frozenset(
        {"npu_inductor_compat.a", "npu_inductor_compat.b", "npu_inductor_compat.c", "npu_inductor_compat.d"}
    )
    assert cycle_problems(graph, (wider,))[0].startswith("known cycle ['npu_inductor_compat.a', ")  # only shrinks


@pytest.mark.once
def test_an_injected_back_edge_fails_with_importlib_strings_read(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "compat/__init__.py": "",
            "compat/__main__.py": 'def f(): return targets.resolve("npu_inductor_compat.tools.cli:main")([])\n',
            "compat/sneaky.py": 'import importlib\nimportlib.import_module("npu_inductor_compat.common.layers")\n',
            "compat/table.py": 'COMMANDS = {"x": "npu_inductor_compat.tools.cli:main"}  # a target, however passed\n',
            "compat/lines.py": 'import importlib\nx = "v2_9"\nimportlib.import_module(f"npu_inductor_compat.{x}")\n',
            "common/__init__.py": "",
            "common/layers.py": "",
            "common/sneaky.py": 'import importlib\nimportlib.import_module(f"npu_inductor_compat.v2_9.{x}")\n',
            "tools/__init__.py": "",
            "tools/cli.py": "",
            "v2_9/__init__.py": "from npu_inductor_compat.v2_12 import LINE\n",
            "v2_12/__init__.py": "from ..tools import cli\n",
        },
    )
    assert back_edge_problems(import_graph(root)) == [
        "npu_inductor_compat.__main__ imports npu_inductor_compat.tools.cli",  # no edge is allowed, the CLI's neither
        "npu_inductor_compat.common.sneaky imports npu_inductor_compat.v2_9.<dynamic>",
        "npu_inductor_compat.sneaky imports npu_inductor_compat.common.layers",
        "npu_inductor_compat.table imports npu_inductor_compat.tools.cli",
        "npu_inductor_compat.v2_12 imports npu_inductor_compat.tools.cli",
        "npu_inductor_compat.v2_9 imports npu_inductor_compat.v2_12",
    ]  # f"npu_inductor_compat.{line}" is dispatch's way to the lines


def test_a_compat_module_whose_name_starts_with_v_is_compat() -> None:
    """compat/version.py is not a line folder: its imports of the tools are back edges like any compat module's."""
    assert folder_of("npu_inductor_compat.version") == "compat"
    assert folder_of("npu_inductor_compat.v2_12.adapters") == "v2_12"
    assert is_back_edge("npu_inductor_compat.version", "npu_inductor_compat.tools.survey")
