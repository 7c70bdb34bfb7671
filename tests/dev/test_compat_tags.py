"""Every version-conditional helper says what changed and when it can go; a tag for a range no longer supported
is stale and fails here (so removing support for a torch line forces the clean-up)."""

from __future__ import annotations

import re

import pytest
import retire
from import_graph import folder_packages
from npu_compat_test_paths import ROOT

from npu_inductor_compat.lines import MIN_SUPPORTED, NEWEST_TESTED

SOURCES = [path for folder in folder_packages(ROOT) for path in (ROOT / folder).rglob("*.py")]
COMPAT = re.compile(r"COMPAT\(>= (\d+)\.(\d+)\): \S")
REMOVE = re.compile(r"CAN REMOVE when MIN_SUPPORTED >= \((\d+), (\d+)\) \[(\w+)\]: \S")
pytestmark = pytest.mark.once  # the source read as text: nothing here depends on torch's Inductor


def tags() -> list[tuple[str, int, str]]:
    found = []
    for path in SOURCES:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if "COMPAT(" in line or "CAN REMOVE when" in line:
                found.append((str(path.relative_to(ROOT)), number, line))
    return found


def test_there_are_tags_to_check() -> None:
    assert len([t for t in tags() if "CAN REMOVE" in t[2]]) >= 3


def test_every_removal_tag_in_the_tree_is_one_the_retire_tool_can_act_on() -> None:
    """Tests, noxfile, pyproject and the workflow too: a tag without a scope, or in a docstring, fails."""
    for path in retire.source_files(ROOT):
        retire.tags_in(path, path.read_text())  # raises on a malformed one
    for path in SOURCES:
        acted_on = {tag.line for tag in retire.tags_in(path, path.read_text())}
        written = {n for n, line in enumerate(path.read_text().splitlines(), start=1) if REMOVE.search(line)}
        assert written <= acted_on, f"{path.name}: lines {sorted(written - acted_on)}: a tag outside a # comment"


def test_every_compat_tag_is_well_formed_and_followed_by_its_removal_plan() -> None:
    problems = []
    for path in SOURCES:
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if "COMPAT(" in line:
                if not COMPAT.search(line):
                    problems.append(f"{path.name}:{index + 1}: malformed COMPAT tag: {line.strip()}")
                window = "\n".join(lines[index : index + 6])
                if not REMOVE.search(window):
                    problems.append(f"{path.name}:{index + 1}: COMPAT without a CAN REMOVE plan within 5 lines")
            if "CAN REMOVE when" in line and not REMOVE.search(line):
                problems.append(f"{path.name}:{index + 1}: malformed CAN REMOVE tag: {line.strip()}")
    assert problems == []


def test_no_tag_is_stale_for_the_supported_range() -> None:
    stale = []
    for file, number, line in tags():
        for match in REMOVE.finditer(line):
            version = (int(match.group(1)), int(match.group(2)))
            if version <= MIN_SUPPORTED:
                stale.append(f"{file}:{number}: removable since MIN_SUPPORTED {MIN_SUPPORTED} >= {version}")
        for match in COMPAT.finditer(line):
            version = (int(match.group(1)), int(match.group(2)))
            if version <= MIN_SUPPORTED:
                stale.append(f"{file}:{number}: COMPAT(>= {version}) is true on every supported line")
            if version > (NEWEST_TESTED[0], NEWEST_TESTED[1] + 3):
                stale.append(f"{file}:{number}: COMPAT(>= {version}) is for a torch far beyond the tested lines")
    for path in retire.source_files(ROOT):  # tests, noxfile, pyproject and the workflow too
        stale += [
            f"{path.relative_to(ROOT)}:{tag.line}: removable since MIN_SUPPORTED {MIN_SUPPORTED} >= {tag.version}"
            for tag in retire.tags_in(path, path.read_text())
            if tag.version <= MIN_SUPPORTED
        ]
    assert sorted(set(stale)) == []
