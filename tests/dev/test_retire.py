"""tools/retire.py: each tag scope removes what it says, untagged old-line code is named, and every line of the real
tree can be retired in turn (a copy; the lint, typecheck and tests after it are `nox -s retire_oldest`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import retire

pytestmark = pytest.mark.once  # source read and rewritten as text: nothing here depends on torch's Inductor

LINES_PY = """
LINES = (
    Line(
        "v2_7_1",
        SpecifierSet(">=2.7.1,<2.9.0"),
        "old",
    ),
    Line("v2_9", SpecifierSet(">=2.9.0"), "new"),
)
"""

V27_ADAPTERS = "from npu_inductor_compat.common import shared\nUSE = shared.only_for_2_7\n"
README = "| module | what |\n|---|---|\n| `v2_7_1` | old |\n| `v2_9` | new |\n"


def tree(root: Path, files: dict[str, str]) -> Path:
    base = {
        "compat/__init__.py": "",
        "compat/lines.py": LINES_PY,
        "common/__init__.py": "",
        "v2_7_1/__init__.py": "",
        "v2_7_1/adapters.py": V27_ADAPTERS,
        "v2_9/__init__.py": "",
        "v2_9/adapters.py": "from npu_inductor_compat.common import shared\nUSE = shared.for_every_line\n",
        "README.md": README,
        "docs/fixes.md": "text\n\n" + README,
    }
    for name, text in {**base, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def retired(tmp_path: Path, files: dict[str, str]) -> tuple[Path, list[str]]:
    source = tree(tmp_path / "source", files)
    copy = tmp_path / "copy"
    retire.copy_tree(source, copy)
    retire.retire_oldest(copy)
    return copy, retire.orphans(source, copy)


SHARED_UNTAGGED = "def only_for_2_7():\n    return 1\n\n\ndef for_every_line():\n    return 2\n"


def test_untagged_code_only_the_retired_line_used_is_named(tmp_path: Path) -> None:
    """The demonstration: a 2.7.1-only helper left untagged in common/ fails the retirement, by name."""
    copy, left = retired(tmp_path, {"common/shared.py": SHARED_UNTAGGED})
    assert not (copy / "v2_7_1").exists()
    assert left == ["common/shared.py:only_for_2_7"]


def test_tagged_code_goes_with_the_line_and_nothing_is_left(tmp_path: Path) -> None:
    tagged = "# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: v2_7_1 only\n" + SHARED_UNTAGGED
    copy, left = retired(tmp_path, {"common/shared.py": tagged})
    assert left == []
    assert (copy / "common/shared.py").read_text() == "def for_every_line():\n    return 2\n"
    lines_py = (copy / "compat/lines.py").read_text()
    assert "v2_7_1" not in lines_py and 'Line("v2_9"' in lines_py
    assert (copy / "README.md").read_text() == "| module | what |\n|---|---|\n| `v2_9` | new |\n"
    assert (copy / "docs/fixes.md").read_text() == "text\n\n| module | what |\n|---|---|\n| `v2_9` | new |\n"


SCOPES = """import functools

TABLE = {
    "keep": 1,
    # COMPAT(>= 2.9): a comment above the tag goes with it
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: a dict entry
    "old": (
        2,
    ),
}
CALL = dict(
    keep=1,
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: a keyword
    old=2,
)


# ------------------------------------------------------------------ a banner above a tag stays
# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: a decorated function
# (a comment after the tag goes with it)
@functools.cache
def old() -> int:
    return 1


def f(x: int) -> int:
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [block]: an early return
    if x < 0:
        return 0
    # END CAN REMOVE
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [tag]: nothing else goes
    y = x + 1  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: this line
    # CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: not due yet
    return x


QUOTED = "CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: in a string, no tag"
"""

AFTER = """import functools

TABLE = {
    "keep": 1,
}
CALL = dict(
    keep=1,
)


# ------------------------------------------------------------------ a banner above a tag stays


def f(x: int) -> int:
    # CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: not due yet
    return x


QUOTED = "CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: in a string, no tag"
"""


def test_each_scope_removes_what_it_says_and_only_due_tags_act(tmp_path: Path) -> None:
    copy, _ = retired(tmp_path, {"common/scopes.py": SCOPES})
    assert (copy / "common/scopes.py").read_text() == AFTER
    ast.parse(AFTER)


def test_a_file_tag_removes_the_file(tmp_path: Path) -> None:
    test = "# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [file]: v2_7_1 only\ndef test_x():\n    pass\n"
    copy, _ = retired(tmp_path, {"tests/test_old.py": test})
    assert not (copy / "tests/test_old.py").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# CAN REMOVE when MIN_SUPPORTED >= (2, 9): no scope\nX = 1\n", "needs a scope"),
        ("# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [all]: unknown\nX = 1\n", "scope one of block, next"),
        ("# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [block]: no end\nX = 1\n", "without a `# END CAN REMOVE`"),
        ("X = 1  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: trailing\n", r"a trailing tag is \[line\]"),
        ("X = (1,\n    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: shared\n    2, 3)\n", "ends inside"),
    ],
)
def test_a_tag_the_tool_cannot_act_on_is_an_error_naming_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(retire.TagError, match=message) as error:
        retired(tmp_path, {"common/bad.py": text})
    assert "bad.py:" in str(error.value)


def test_a_git_checkout_is_never_changed(tmp_path: Path) -> None:
    source = tree(tmp_path / "checkout", {".git/HEAD": "ref: refs/heads/main\n"})
    with pytest.raises(SystemExit, match="is a git checkout"):
        retire.retire_oldest(source)
    assert (source / "v2_7_1" / "adapters.py").is_file()


def test_every_line_mode_retires_line_after_line_and_names_what_each_leaves(tmp_path: Path) -> None:
    """Three lines: retiring v2_7_1 then v2_9 each checked; untagged v2_9-only code is named for v2_9."""
    assert 'Line("v2_9", SpecifierSet(">=2.9.0"), "new"),' in LINES_PY
    lines_py = LINES_PY.replace(
        'Line("v2_9", SpecifierSet(">=2.9.0"), "new"),',
        'Line("v2_9", SpecifierSet(">=2.9.0,<2.12.0"), "mid"),\n    Line("v2_12", SpecifierSet(">=2.12.0"), "new"),',
    )
    shared = "# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: v2_7_1 only\n" + SHARED_UNTAGGED
    source = tree(
        tmp_path / "source",
        {"compat/lines.py": lines_py, "common/shared.py": shared, "v2_12/__init__.py": "", "v2_12/adapters.py": ""},
    )
    (tmp_path / "work").mkdir()
    assert retire.every_line(source, tmp_path / "work") == ["v2_9: common/shared.py:for_every_line was used only by it"]
