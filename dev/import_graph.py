"""The package's import graph read from the source (imports, importlib strings, -m command lines, entry points),
its rooms, back edges and cycles; and the folder-to-package map, read from pyproject.toml's package-dir."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Set
from dataclasses import dataclass
from pathlib import Path

import tomllib

PACKAGE = "npu_inductor_compat"
LINE_PREFIX = "v"  # a version module's folder: v2_7_1, v2_9, ... (LINES names them)

# Calls whose first argument, a string literal, names a module (or a "module:Qual.name" target) to import.
IMPORTING_CALLS = ("import_module", "__import__", "resolve", "parse")
# Any string literal of this package's "module:Qual.name" form names a target to import, wherever it is passed.
TARGET = re.compile(rf"{PACKAGE}(?:\.\w+)*:\w+(?:\.\w+)*")
DYNAMIC = "<dynamic>"  # a part of an f-string the test cannot resolve (neither a constant nor a line's name)
# compat's orchestration, the roof: the one place that composes (it loads the lines by name and reaches the tools'
# commands through entry points); the rest of compat is the floor, which imports nothing above it.
ROOF = frozenset({"activation", "autoload", "dispatch", "registry", "__main__"})
# Calls that load an entry point group (its first argument: the group's name, or a constant holding it).
LOADING_CALLS = ("load",)


def folder_packages(root: Path) -> dict[str, str]:
    """Source folder -> import name: pyproject.toml's ``[tool.setuptools.package-dir]``, the one place it is stated
    (compat is the package itself)."""
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {folder: package for package, folder in declared.items()}


def planted_tree(root: Path, files: dict[str, str]) -> Path:
    """The tests' planted trees: ``files`` under ``root``, and pyproject.toml's package-dir (after any pyproject text
    given) for each top-level folder with an ``__init__.py`` (compat is the package)."""
    folders = sorted({name.split("/")[0] for name in files if name.count("/") == 1 and name.endswith("/__init__.py")})
    rows = [f'"{PACKAGE if folder == "compat" else f"{PACKAGE}.{folder}"}" = "{folder}"' for folder in folders]
    pyproject = files.get("pyproject.toml", "") + "[tool.setuptools.package-dir]\n" + "".join(f"{r}\n" for r in rows)
    for name, text in {**files, "pyproject.toml": pyproject}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


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


@functools.cache
def _parsed(text: str) -> ast.Module:
    """A source text's tree, parsed once: the graph, the entry point constants and the entry point edges all read
    every module (the trees are only read, never changed)."""
    return ast.parse(text)


def string_constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level ``NAME = "text"`` assignments (what an f-string's ``{NAME}`` stands for)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update({target.id: node.value.value for target in node.targets if isinstance(target, ast.Name)})
    return found


def text_of(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A string argument as written: a literal, a module constant, or an f-string whose parts that are neither
    become DYNAMIC (``f"{PACKAGE}.{name}"`` -> ``npu_inductor_compat.<dynamic>``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                inner = value.value if isinstance(value, ast.FormattedValue) else value
                parts.append(text_of(inner, constants) or DYNAMIC)  # type: ignore[arg-type]
        return "".join(parts)
    return None


def _named(node: ast.Call, constants: dict[str, str]) -> str | None:
    """The module a call like ``importlib.import_module("x")`` or ``targets.resolve("x:y")`` names (see text_of)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called not in IMPORTING_CALLS or not node.args:
        return None
    text = text_of(node.args[0], constants)
    if text is None:
        return None
    text = text.partition(":")[0]
    return text if text.startswith(PACKAGE) else None


def _run_as_main(node: ast.List | ast.Tuple, constants: dict[str, str]) -> Iterator[str]:
    """The modules a command line runs with ``-m`` (``[sys.executable, "-m", "npu_inductor_compat.x", ...]``)."""
    for flag, after in zip(node.elts, node.elts[1:], strict=False):
        if isinstance(flag, ast.Constant) and flag.value == "-m":
            text = text_of(after, constants)
            if text is not None and text.startswith(PACKAGE):
                yield f"{text}.__main__" if text == PACKAGE else text


def imported_names(path: Path, module: str, groups: EntryPoints | None = None) -> Iterator[str]:
    """What a module imports: import statements anywhere (function bodies and TYPE_CHECKING blocks included),
    relative ones resolved, the modules named by IMPORTING_CALLS and by target strings, the modules it runs with
    ``-m``, and every target of an entry point group (``groups``: group -> modules) it loads by name."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = _parsed(path.read_text())
    constants = string_constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # ``from a import b``: the module a.b, else (b is an attribute) a; see import_graph
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and (named := _named(node, constants)) is not None:
            yield named
        elif isinstance(node, ast.Call) and groups and (group := _loaded_group(node, groups)) is not None:
            yield from sorted(groups.targets[group])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and TARGET.fullmatch(node.value):
            yield node.value.partition(":")[0]
        elif isinstance(node, (ast.List, ast.Tuple)):
            yield from _run_as_main(node, constants)


@dataclass(frozen=True)
class EntryPoints:
    """pyproject.toml's entry point groups: group -> the modules its entry points name; and the package's top-level
    constants that hold a group's name (``COMMANDS = "npu_inductor_compat.commands"``): constant name -> group."""

    targets: dict[str, set[str]]
    constants: dict[str, str]


def entry_points(root: Path) -> EntryPoints:
    path = root / "pyproject.toml"
    declared = tomllib.loads(path.read_text()).get("project", {}).get("entry-points", {}) if path.is_file() else {}
    targets = {
        group: {target.partition(":")[0].strip() for target in entries.values()} for group, entries in declared.items()
    }
    constants = {}
    for module in module_files(root).values():
        constants.update(
            {name: text for name, text in string_constants(_parsed(module.read_text())).items() if text in targets}
        )
    return EntryPoints(targets, constants)


def _loaded_group(node: ast.Call, groups: EntryPoints) -> str | None:
    """The entry point group a call like ``entry_points.load(entry_points.COMMANDS, name)`` loads from."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called not in LOADING_CALLS or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and first.value in groups.targets:
        return str(first.value)
    name = first.attr if isinstance(first, ast.Attribute) else getattr(first, "id", None)
    return groups.constants.get(name) if name else None


def line_names(root: Path) -> list[str]:
    return sorted(folder for folder in folder_packages(root) if _is_line(folder))


def _resolved(name: str, files: dict[str, Path], lines: list[str]) -> set[str]:
    """A name with DYNAMIC parts, each read as every line's folder name, or where no line's name makes a module, as
    every module of the package written before it (a registry importing its folder's modules by name): the modules
    it can be; unresolved (kept as written) when no reading is a module."""
    if DYNAMIC not in name:
        return {name}
    readings = {name}
    while any(DYNAMIC in reading for reading in readings):
        step = set()
        for reading in readings:
            package = reading.partition(DYNAMIC)[0].rstrip(".")
            parts = [line for line in lines if f"{package}.{line}" in files] or [
                module.rpartition(".")[2] for module in files if module.rpartition(".")[0] == package
            ]
            step |= {reading.replace(DYNAMIC, part, 1) for part in parts or lines}
        readings = step
    found = {reading for reading in readings if reading in files}
    return found or {name}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: each name is the longest module it starts with (``from a import
    b`` is an edge to ``a.b`` when that is a module, else to ``a``); a dynamic name is read over the line names, and
    stays as written when no reading is a module. A package's ``__init__`` that Python runs before any submodule is
    not an edge: only what is imported from it."""
    files = module_files(root)
    lines = line_names(root)
    groups = entry_points(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges = set()
        for written in imported_names(path, module, groups):
            for name in _resolved(written, files, lines):
                if not name.startswith(PACKAGE):
                    continue
                if DYNAMIC in name:
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


def entry_point_edges(root: Path) -> set[tuple[str, str]]:
    """The edges import_graph has only because a module loads an entry point group: (loader, target module)."""
    files = module_files(root)
    groups = entry_points(root)
    return {
        (module, target)
        for module, path in files.items()
        for node in ast.walk(_parsed(path.read_text()))
        if isinstance(node, ast.Call) and (group := _loaded_group(node, groups)) is not None
        for target in groups.targets[group]
        if target in files
    }


def unresolved_problems(graph: dict[str, set[str]]) -> list[str]:
    """Every dynamic import no reading resolves: an edge the tests cannot see is a problem, not an excuse."""
    return [
        f"{source} imports {target}, which no line name resolves"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if DYNAMIC in target
    ]


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
    """The room a module name lives in: its source folder, and ``roof`` for compat's orchestration (ROOF); None for
    a dynamic name whose folder part is not written out."""
    parts = name.split(".")
    if len(parts) == 1:
        return "roof"  # the package's __init__: the public names, each a lazy import from the roof
    if DYNAMIC in parts[1]:
        return None
    if parts[1] in ("common", "tools") or _is_line(parts[1]):
        return parts[1]
    return "roof" if parts[1] in ROOF else "compat"


def _is_line(folder: str | None) -> bool:
    return folder is not None and folder.startswith(LINE_PREFIX) and folder[1:2].isdigit()


def _floor(room: str) -> int:
    """Rooms bottom up: compat's floor, common, the lines, the roof, the tools."""
    return 2 if _is_line(room) else ("compat", "common", "line", "roof", "tools").index(room)


def is_back_edge(source: str, target: str) -> bool:
    """An import pointing up, or from one line to another: compat's floor imports nothing above it; common no line,
    roof or tool; a line no other line, no roof and no tool; the roof no tool. Tools may import anything."""
    here, there = folder_of(source), folder_of(target)
    if here is None or there is None or here == there:
        return False
    if _is_line(here) and _is_line(there):
        return True
    return _floor(there) > _floor(here)


def back_edge_problems(graph: dict[str, set[str]], plugins: Set[tuple[str, str]] = frozenset()) -> list[str]:
    """Every back edge but one kind: the roof loading a tool by entry point (``plugins``: pyproject.toml registers
    the tools' commands; the runtime names none of them)."""
    return [
        f"{source} imports {target}"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if is_back_edge(source, target)
        and not ((source, target) in plugins and folder_of(source) == "roof" and folder_of(target) == "tools")
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
