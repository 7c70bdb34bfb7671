"""The README's shape: under 250 lines, a quick start of at most 15 lines first, and the two set-up commands."""

from __future__ import annotations

import re

import pytest
from npu_compat_test_paths import ROOT

pytestmark = pytest.mark.once  # the README read as text: nothing here depends on torch's Inductor

README = ROOT / "README.md"


def _sections(text: str) -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def test_the_readme_stays_short_and_opens_with_a_quick_start() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250, "README.md has grown past 250 lines: move detail into docs/"
    sections = _sections(text)
    assert sections and sections[0][0] == "Quick start", f"the first section is {sections[0][0]!r}, not Quick start"
    body = list(sections[0][1])
    while body and not body[-1].strip():
        body.pop()
    assert len(body) <= 15, f"the quick start has {len(body)} lines (at most 15)"
    assert any("codegen" in line and "--check-kernels" in line and "examples/models/" in line for line in body)


def test_set_up_keeps_exactly_the_two_commands_a_newcomer_needs() -> None:
    sections = dict(_sections(README.read_text(encoding="utf-8")))
    blocks = re.findall(r"```bash\n(.*?)```", "\n".join(sections["Set up"]), flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    expected = "pip install -e . --config-settings editable_mode=strict && python -m npu_inductor_compat"
    assert commands == [expected, "pip install nox uv && nox"], commands


def test_every_link_resolves_and_the_documentation_table_lists_every_doc_once() -> None:
    """The README's relative links name files in the tree, and its Documentation table has a row for each docs/*.md
    (a new page gets a row; a removed one loses it). Not proven: that each row's summary is still accurate."""
    text = README.read_text(encoding="utf-8")
    root = README.parent
    targets = {target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target}
    missing = sorted(target for target in targets if target and not (root / target).exists())
    assert not missing, f"README.md links to files that do not exist: {missing}"
    table = "\n".join(dict(_sections(text))["Documentation"])
    listed = re.findall(r"^\| \[(docs/[\w.-]+\.md)\]", table, flags=re.M)
    assert len(listed) == len(set(listed)), listed
    assert sorted(listed) == sorted(f"docs/{page.name}" for page in (root / "docs").glob("*.md"))
