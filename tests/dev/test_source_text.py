"""Module docstrings of at most 3 lines, everywhere, and no essay in comments after them; no reference to a file of
this tree that does not exist."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import retire
from import_graph import folder_packages
from npu_compat_test_paths import ROOT

pytestmark = pytest.mark.once  # the source read as text: nothing here depends on torch's Inductor

MAX_DOCSTRING_LINES = 3
# Files other branches are reworking (issue #26): shortened there. May only shrink; an entry whose docstring is
# already short fails, so it is taken out.
NOT_YET_SHORT: set[str] = set()
# A path into this tree (a folder of it, then a file with an extension), not preceded by another path part.
TREE_PATH = re.compile(
    r"(?<![\w/.-])((?:compat|common|tools|tests|docs|examples|dev|v\d+(?:_\d+)*)/[\w/.-]*\w\.(?:py|md|h|cpp|json|yml))"
)


def files(*suffixes: str) -> list[Path]:
    """The tree's files with these suffixes, without VCS, venvs, caches and outputs."""
    return [path for path in retire.source_files(ROOT) if path.suffix in suffixes]


def _docstring_token(source: str) -> tokenize.TokenInfo | None:
    """The module docstring's token: the first token, if a string (read token by token: parsing it all is slow)."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING):
            continue
        return token if token.type == tokenize.STRING else None
    return None


def docstring_lines(source: str) -> int:
    """Lines of the module docstring."""
    token = _docstring_token(source)
    docstring = ast.literal_eval(token.string) if token is not None else None
    return len(docstring.strip("\n").splitlines()) if isinstance(docstring, str) else 0


def test_every_module_docstring_is_at_most_three_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for path in files(".py")
        if (lines := docstring_lines(path.read_text())) > MAX_DOCSTRING_LINES
    }
    assert {name: n for name, n in long.items() if name not in NOT_YET_SHORT} == {}
    assert NOT_YET_SHORT <= set(long), f"already short, take out of NOT_YET_SHORT: {NOT_YET_SHORT - set(long)}"


def test_the_docstring_count_sees_a_long_one() -> None:
    assert docstring_lines('"""One.\n\nTwo.\nThree."""\n') == 4
    assert docstring_lines('"""One.\nTwo.\nThree.\n"""\n') == 3
    assert docstring_lines("x = 1\n") == 0


# Comment lines allowed right after a module's docstring: a short note. Prose that explains code sits beside the code
# it explains (a comment there, a docstring), or in docs/.
MAX_HEADER_COMMENT_LINES = 4


def header_comment_lines(source: str) -> int:
    """Whole-line comments directly after the module docstring (blank lines between them count as part of it)."""
    token = _docstring_token(source)
    if token is None:
        return 0
    count = 0
    for line in source.splitlines()[token.end[0] :]:
        if line.startswith("#"):
            count += 1
        elif line.strip():
            break
    return count


def test_no_module_moves_its_prose_into_comments_after_its_docstring() -> None:
    """The three-line docstring rule is not met by moving the prose into a comment block right after it (the
    runtime, the tools and dev/)."""
    folders = [*folder_packages(ROOT), "dev"]
    long = {
        path.relative_to(ROOT).as_posix(): count
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (count := header_comment_lines(path.read_text())) > MAX_HEADER_COMMENT_LINES
    }
    assert long == {}


def test_the_header_comment_count_sees_a_long_one() -> None:
    assert header_comment_lines('"""Doc."""\n\n# one\n#\n# two\n\nimport os\n# not counted\n') == 3
    assert header_comment_lines("# no docstring\nx = 1\n") == 0


def dangling(text: str, paths: bool = True) -> list[str]:
    found = [match.group(1) for match in TREE_PATH.finditer(text) if not (ROOT / match.group(1)).exists()]
    return (found if paths else []) + [name for name in ("DESIGN.md", "../shared/") if name in text]


def test_no_reference_to_a_file_the_tree_does_not_have() -> None:
    """Docs and code (the tests' paths are left out: they write synthetic trees; never a DESIGN.md or ../shared/)."""
    problems = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in files(".py", ".md", ".toml", ".yml")
        if path.name != "test_source_text.py"
        for name in dangling(path.read_text(), paths=path.relative_to(ROOT).parts[0] != "tests")
    ]
    assert problems == []


def test_a_dangling_reference_is_found() -> None:
    assert dangling("see docs/fixes.md and common/composition/layers.py") == []
    assert dangling("see docs/nothing.md, DESIGN.md §2 and torch/_inductor/graph.py") == [
        "docs/nothing.md",
        "DESIGN.md",
    ]
