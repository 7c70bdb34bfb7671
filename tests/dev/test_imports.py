"""The import graph, read from the source: imports point one way (no back edge) and no modules import each other."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from import_graph import (
    PACKAGE,
    back_edge_problems,
    cycle_problems,
    cycles,
    entry_point_edges,
    folder_of,
    import_graph,
    is_back_edge,
    planted_tree,
    unresolved_problems,
)
from npu_compat_test_paths import ROOT

# Cycles that exist today and may only shrink: each is a set of modules that import each other. A cycle not
# contained in one of these fails the test, and so does an entry that is no longer exactly a cycle (shrink it).
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()


@pytest.mark.once
def test_imports_point_one_way() -> None:
    """tools -> roof -> v* -> common -> compat: no back edge, with importlib strings (f-strings read over the line
    names), ``-m`` command lines, entry points and local imports read; every dynamic import resolved."""
    graph = import_graph(ROOT)
    assert back_edge_problems(graph, entry_point_edges(ROOT)) == []
    assert unresolved_problems(graph) == []


@pytest.mark.once
def test_no_import_cycles_beyond_the_known_ones() -> None:
    assert cycle_problems(import_graph(ROOT), KNOWN_CYCLES) == []


# Edges cut out of the package's cycles (issues #26, #42), and ones the cuts rely on staying out: each group, put
# back, makes a cycle again. A kernel worker's client runs it (`python -m`: an edge), so the worker imports no client.
CUT_EDGES: dict[str, tuple[tuple[str, str], ...]] = {
    "device raises through not_simulated, not the stand-in": (("device", "standin"),),
    "torch_npu_wheel's TTIR-check record and the lowering worker's environment were in one module": (
        ("torch_npu_wheel", "kernel_check"),
        ("kernel_check", "torch_npu_wheel"),
    ),
    "the TTIR worker imports not its client (it owns its flag)": (("ttir_check_worker", "ttir_check"),),
    "the lowering worker imports not its client (it owns its stages and records)": (
        ("kernel_lowering", "kernel_check"),
    ),
    "the stand-in reaches the wheel's depth (wheel_depth), not the provider that reads the active stand-in": (
        ("standin", "torch_npu_wheel"),
    ),
    "the line type (linespec) loads no line: the dispatcher does, above the lines": (
        ("compat:linespec", "line:v2_12"),
    ),
    "the provider's records are handed the TTIR checker by the codegen process: they import no client": (
        ("wheel_records", "ttir_check"),
    ),
    "the option record reaches the backend switch through hooks, not by importing activation": (
        ("common:composition.option", "compat:activation"),
    ),
}


def _full(name: str) -> str:
    """A CUT_EDGES name: a module of the simulated NPU's tools (in whichever of its rooms), or ``compat:x``,
    ``common:x``, ``line:v2_12``."""
    room, _, module = name.rpartition(":")
    if room:
        return f"{PACKAGE}.{module}" if room in ("compat", "line") else f"{PACKAGE}.{room}.{module}"
    (found,) = [
        found
        for found in _graph_of_this_tree()
        if found.startswith(f"{PACKAGE}.tools.simulated.") and found.endswith(f".{module}")
    ]
    return found


@functools.cache
def _graph_of_this_tree() -> dict[str, frozenset[str]]:
    return {module: frozenset(targets) for module, targets in import_graph(ROOT).items()}


@pytest.mark.once
@pytest.mark.parametrize("why", list(CUT_EDGES))
def test_a_cut_edge_put_back_is_a_cycle_again(why: str) -> None:
    graph = {module: set(targets) for module, targets in _graph_of_this_tree().items()}  # a copy to add to
    edges = [tuple(_full(name) for name in edge) for edge in CUT_EDGES[why]]
    assert not any(target in graph[source] for source, target in edges)
    for source, target in edges:
        graph[source].add(target)
    members = {name for edge in edges for name in edge}
    assert any(members <= cycle and cycle not in KNOWN_CYCLES for cycle in cycles(graph))
    assert cycle_problems(graph, KNOWN_CYCLES)  # and the dependency test fails


@pytest.mark.once
def test_an_injected_cycle_fails_naming_its_path(tmp_path: Path) -> None:
    """A cycle hidden in a function body, an importlib string and a TYPE_CHECKING block is still a cycle."""
    root = planted_tree(
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
    root = planted_tree(
        tmp_path,
        {
            "compat/__init__.py": "",
            "compat/__main__.py": 'def f(): return targets.resolve("npu_inductor_compat.tools.cli:main")([])\n',
            "compat/sneaky.py": 'import importlib\nimportlib.import_module("npu_inductor_compat.common.layers")\n',
            "compat/table.py": 'COMMANDS = {"x": "npu_inductor_compat.tools.cli:main"}  # a target, however passed\n',
            "compat/lines.py": 'import importlib\nx = "v2_9"\nimportlib.import_module(f"npu_inductor_compat.{x}")\n',
            "compat/dispatch.py": 'import importlib\nimportlib.import_module(f"npu_inductor_compat.{line}")\n',
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
        "npu_inductor_compat.__main__ imports npu_inductor_compat.tools.cli",  # a written target: only entry points
        "npu_inductor_compat.common.sneaky imports npu_inductor_compat.v2_9.<dynamic>",
        "npu_inductor_compat.lines imports npu_inductor_compat.v2_9",  # a constant in an f-string is read
        "npu_inductor_compat.sneaky imports npu_inductor_compat.common.layers",
        "npu_inductor_compat.table imports npu_inductor_compat.tools.cli",
        "npu_inductor_compat.v2_12 imports npu_inductor_compat.tools.cli",
        "npu_inductor_compat.v2_9 imports npu_inductor_compat.v2_12",
    ]  # dispatch, the roof, loads each line by f"npu_inductor_compat.{line}": read over the line names, no back edge


def test_a_compat_module_whose_name_starts_with_v_is_compat() -> None:
    """compat/version.py is not a line folder: its imports of the tools are back edges like any compat module's."""
    assert folder_of("npu_inductor_compat.version") == "compat"
    assert folder_of("npu_inductor_compat.v2_12.adapters") == "v2_12"
    assert is_back_edge("npu_inductor_compat.version", "npu_inductor_compat.tools.torch_npu_survey.survey")


@pytest.mark.once
def test_planted_edges_of_each_kind_fail(tmp_path: Path) -> None:
    """A dynamic import read over the line names, a ``-m`` command line and an entry point group are edges: a cycle
    or a back edge through each fails, as an unresolvable dynamic import does; the roof's entry point edge into the
    tools (how the CLI reaches the commands) alone is allowed."""
    root = planted_tree(
        tmp_path,
        {
            "pyproject.toml": '[project.entry-points."npu_inductor_compat.commands"]\n'
            'run = "npu_inductor_compat.tools.cli:main"\n'
            '[project.entry-points."npu_inductor_compat.extras"]\n'
            'x = "npu_inductor_compat.v2_9.extra:x"\n',
            "compat/__init__.py": "",
            "compat/__main__.py": 'COMMANDS = "npu_inductor_compat.commands"\n'
            "def main(name):\n    return entry_points.load(entry_points.COMMANDS, name)\n",
            "compat/dispatch.py": 'import importlib\nPACKAGE = "npu_inductor_compat"\n'
            'def load(name):\n    return importlib.import_module(f"{PACKAGE}.{name}")\n',
            "common/__init__.py": "",
            "common/plugins.py": 'EXTRAS = "npu_inductor_compat.extras"\ndef f():\n    return load(EXTRAS, "x")\n',
            "common/runner.py": 'import sys\nCOMMAND = [sys.executable, "-m", "npu_inductor_compat.tools.cli"]\n',
            "common/odd.py": 'import importlib\nimportlib.import_module(f"npu_inductor_compat.{kind}.x")\n',
            "tools/__init__.py": "",
            "tools/cli.py": "from npu_inductor_compat import __main__\n",
            "tools/a.py": 'import sys\nsubprocess.run([sys.executable, "-m", "npu_inductor_compat.tools.b"])\n',
            "tools/b.py": "from npu_inductor_compat.tools import a\n",
            "v2_9/__init__.py": "from npu_inductor_compat.dispatch import load\n",
            "v2_9/extra.py": "",
        },
    )
    graph = import_graph(root)
    name = "npu_inductor_compat."
    assert [problem.replace(name, "") for problem in back_edge_problems(graph, entry_point_edges(root))] == [
        "common.plugins imports v2_9.extra",  # an entry point group loaded below the module it names
        "common.runner imports tools.cli",  # a -m command line
        "v2_9 imports dispatch",  # a line importing the roof
    ]  # and not __main__ -> tools.cli: the roof loading a tool by its entry point
    assert [problem.replace(name, "") for problem in unresolved_problems(graph)] == [
        "common.odd imports <dynamic>.x, which no line name resolves"
    ]
    assert [problem.replace(name, "") for problem in cycle_problems(graph, ())] == [
        "import cycle: __main__ -> tools.cli -> __main__",  # through an entry point
        "import cycle: dispatch -> v2_9 -> dispatch",  # through an f-string read over the line names
        "import cycle: tools.a -> tools.b -> tools.a",  # through a -m command line
    ]
