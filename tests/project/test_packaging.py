"""Packaging and import hygiene: one top-level package in the wheel, a side-effect-free import."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from import_graph import folder_packages
from npu_compat_test_paths import ROOT

from npu_inductor_compat.lines import LINES

LINE_FOLDERS = tuple(line.module for line in LINES)
SOURCE_FOLDERS = tuple(folder_packages(ROOT))  # pyproject.toml's package-dir


@pytest.mark.subprocess
@pytest.mark.once
def test_built_wheel_holds_only_npu_inductor_compat(tmp_path: Path) -> None:
    """Build the wheel from a copy of the tree (parallel-safe) with the real setuptools backend and list it."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", *SOURCE_FOLDERS):
        item = ROOT / name
        if item.is_dir():
            shutil.copytree(item, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(item, source / name)
    out = tmp_path / "dist"
    out.mkdir()
    code = f"import setuptools.build_meta as b; print(b.build_wheel({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    wheel = next(out.glob("*.whl"))
    assert wheel.name.startswith("npu_inductor_compat-")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"npu_inductor_compat"}
    for sub in ("common", "tools", "tools/simulated", *LINE_FOLDERS):
        assert f"npu_inductor_compat/{sub}/__init__.py" in names
    assert "npu_inductor_compat/__init__.py" in names and "npu_inductor_compat/py.typed" in names
    # the simulated NPU's C++ source is package data: a normal install must be able to build the device
    assert "npu_inductor_compat/tools/simulated/npu/device_ext.cpp" in names
    assert "npu_inductor_compat/common/device/npu_launch_runtime.h" in names  # spliced into every NPU C++ wrapper
    from npu_inductor_compat.tools.simulated.execution.emulated_runtime import SOURCES

    for source in SOURCES:
        assert f"npu_inductor_compat/tools/simulated/execution/{source}" in names  # the emulated NPU runtime
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    declared = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "npu_inductor_compat = npu_inductor_compat.autoload:autoload" in declared
    # a normal install finds the tools' commands and fix providers as the editable one does (test_entry_points.py)
    assert "[npu_inductor_compat.commands]\ncodegen = npu_inductor_compat.tools.commands:codegen\n" in declared
    assert "[npu_inductor_compat.fix_providers]\ntorch_npu-wheel = npu_inductor_compat.tools.commands:" in declared
    assert not any(
        name.startswith(tuple(f"{folder}/" for folder in (*SOURCE_FOLDERS, "tests", "dev"))) for name in names
    )


@pytest.mark.once
def test_tests_import_the_installed_package_not_the_source_folders() -> None:
    import npu_inductor_compat
    import npu_inductor_compat.common

    assert npu_inductor_compat.__name__ == "npu_inductor_compat"
    assert Path(npu_inductor_compat.__file__).parent.name in ("compat", "npu_inductor_compat")
    assert Path(npu_inductor_compat.common.__file__).parent.name in ("common",)
    assert "compat" not in sys.modules and "common" not in sys.modules


@pytest.mark.subprocess
def test_import_applies_nothing_sets_no_env_and_imports_no_inductor(run_python: Any) -> None:
    """In a fresh interpreter: import torch, snapshot, import the package, compare."""
    code = """
import json, os, sys
import torch
import torch._inductor.utils as u  # only to read GPU_TYPES afterwards (importing it sets TORCHINDUCTOR_CACHE_DIR)
gpu_types = list(u.GPU_TYPES)
mods, env = set(sys.modules), dict(os.environ)
import npu_inductor_compat, npu_inductor_compat.common
print(json.dumps({
    "new_inductor": sorted(m for m in set(sys.modules) - mods if m.startswith("torch._inductor")),
    "env_changed": sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)),
    "gpu_types_same": list(u.GPU_TYPES) == gpu_types,
    "applied": npu_inductor_compat.status()["applied"],
}))
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"new_inductor": [], "env_changed": [], "gpu_types_same": True, "applied": []}


@pytest.mark.subprocess
def test_plain_import_does_not_import_torch_inductor_at_all(run_python: Any) -> None:
    code = """
import sys
import torch
before = {m for m in sys.modules if m.startswith("torch._inductor")}
import npu_inductor_compat
after = {m for m in sys.modules if m.startswith("torch._inductor")}
print(sorted(after - before))
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


@pytest.mark.once
def test_no_bare_imports_of_source_folders() -> None:
    """Belt and braces beside ruff's banned-api: no module imports a source folder by its folder name."""
    import re

    pattern = re.compile(rf"^\s*(from|import)\s+({'|'.join(SOURCE_FOLDERS)})\b", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in (*SOURCE_FOLDERS, "tests")
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text())
    ]
    assert offenders == []


@pytest.mark.once
def test_pyproject_lists_every_package_its_package_dir_maps() -> None:
    """setuptools needs every package named: pyproject's ``packages`` is exactly the package-dir folders and each
    sub-folder with an ``__init__.py`` under them (a new room that is not listed would be left out of the wheel),
    and ruff's banned-api names every source folder."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join((package, *init.parent.relative_to(ROOT / folder).parts))
        for folder, package in folder_packages(ROOT).items()
        for init in (ROOT / folder).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert sorted(setuptools["packages"]) == sorted(on_disk)
    banned = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["flake8-tidy-imports"]
    assert sorted(banned["banned-api"]) == sorted(SOURCE_FOLDERS)


@pytest.mark.once
def test_every_package_data_file_the_source_reads_is_where_it_looks() -> None:
    """Each ``resources.files("package").joinpath(NAME)`` in the source names a package that holds NAME (a file
    moved to another room without its look-up would fail only in the slow tier's C++ builds)."""
    import ast
    from importlib import resources

    from import_graph import DYNAMIC, module_files, string_constants, text_of

    found = []
    for path in module_files(ROOT).values():
        tree = ast.parse(path.read_text())
        constants = string_constants(tree)
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "joinpath"
            ):
                continue
            inner = node.func.value
            if isinstance(inner, ast.Call) and getattr(inner.func, "attr", "") == "files":
                package, name = (text_of(arg, constants) for arg in (inner.args[0], node.args[0]))
                read = [None if text is None or DYNAMIC in text else text for text in (package, name)]
                found.append((str(path.relative_to(ROOT)), *read))
    assert found, "no package data look-up found: the scan is broken"
    missing = [entry for entry in found if None in entry or not resources.files(entry[1]).joinpath(entry[2]).is_file()]
    assert missing == []


@pytest.mark.once
def test_each_folder_says_what_lives_there() -> None:
    """Every package folder's __init__.py, sub-packages too, opens with a one-line docstring of what it holds."""
    import ast

    inits = [init for folder in SOURCE_FOLDERS for init in sorted((ROOT / folder).rglob("__init__.py"))]
    assert len(inits) > len(SOURCE_FOLDERS)  # the sub-packages are read too
    wrong = {}
    for init in inits:
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if len(doc.strip().splitlines()) != 1:
            wrong[str(init.relative_to(ROOT))] = doc
    assert wrong == {}


@pytest.mark.once
def test_contributor_habits_license_changelog_and_pre_commit_match_the_project() -> None:
    """The LICENSE file is the license pyproject.toml declares; pre-commit runs the lint session's ruff checks."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    noxfile = (ROOT / "noxfile.py").read_text()
    assert '"ruff", "check", "."' in noxfile and '"ruff", "format", "--check", "."' in noxfile
    assert "id: ruff-check" in hooks and "id: ruff-format" in hooks and "--check" in hooks
