"""Retire the oldest torch line in a copy of the source tree: its folder, its LINES row and what its tags name.
`python dev/retire.py SOURCE COPY` copies SOURCE and retires in the copy; `nox -s retire_oldest` tests it."""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import shutil
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import architecture

# The tag: `CAN REMOVE when MIN_SUPPORTED >= (X, Y) [scope]: why`, in a comment, where [scope] says what goes once
# the oldest supported release reaches X.Y (docs/fixes.md):
#   [block] the tag's comment through the next `# END CAN REMOVE` line;
#   [next]  the tag's comment and the statement (a def or class with its decorators) or the entry of the enclosing
#           tuple, list, dict or call that starts on the next code line;
#   [line]  the line whose trailing comment holds the tag (for pyproject.toml, ci.yml and other non-Python files);
#   [file]  the whole file;
#   [tag]   the tag's comment alone: nothing else has to go (it says why).
# "The tag's comment" is the tag and the whole-line comments after it, and a COMPAT comment just above it.
TAG = re.compile(r"CAN REMOVE when MIN_SUPPORTED >= \((\d+), (\d+)\)(?: \[(\w+)\])?(:?)")
SCOPES = ("block", "next", "line", "file", "tag")
END = re.compile(r"^\s*#\s*END CAN REMOVE\b")
SKIP_DIRS = {".git", ".nox", "build", "out", "__pycache__", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
SUFFIXES = {".py", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".md"}


class TagError(ValueError):
    """A tag the tool cannot act on: the message names the file, the line and what is valid."""


class NoNextLine(TagError):
    """LINES has one line left: there is none to keep after the oldest."""


@dataclass(frozen=True)
class Tag:
    path: Path
    line: int  # 1-based
    version: tuple[int, int]
    scope: str


def source_files(root: Path) -> Iterator[Path]:
    """The tree's text files a tag may be in, without VCS, venvs, caches and outputs (SKIP_DIRS)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name not in SKIP_DIRS and not name.endswith(".egg-info"))
        for name in sorted(files):
            if Path(name).suffix in SUFFIXES:
                yield Path(folder) / name


def _comments(path: Path, text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, comment text, whether the comment is the whole line) of each comment; in Python only real
    comments count (a tag quoted in a string is no tag)."""
    lines = text.splitlines()
    if path.suffix != ".py":
        for number, line in enumerate(lines, start=1):
            if "#" in line:
                at = line.index("#")
                yield number, line[at:], not line[:at].strip()
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            yield row, token.string, not lines[row - 1][:column].strip()


def tags_in(path: Path, text: str) -> list[Tag]:
    """Every tag in one file's comments; a malformed one (no scope, an unknown one, a [line] tag on a line of its
    own or another trailing code) raises TagError."""
    found: list[Tag] = []
    if "CAN REMOVE when" not in text:
        return found
    for number, comment, whole_line in _comments(path, text):
        match = TAG.search(comment)
        if match is None:
            continue
        where = f"{path}:{number}"
        scope = match.group(3)
        if scope not in SCOPES or match.group(4) != ":":
            raise TagError(
                f"{where}: a CAN REMOVE tag needs a scope and a reason: "
                f"`CAN REMOVE when MIN_SUPPORTED >= (X, Y) [scope]: why`, scope one of {', '.join(SCOPES)}"
            )
        if scope != "line" and not whole_line:
            raise TagError(f"{where}: [{scope}] tags are whole-line comments; a trailing tag is [line]")
        if scope == "line" and whole_line:
            raise TagError(f"{where}: a [line] tag trails the line it removes, not a comment line of its own")
        found.append(Tag(path, number, (int(match.group(1)), int(match.group(2))), scope))
    return found


def _comment_run(lines: list[str], index: int) -> tuple[int, int]:
    """The 0-based first and last line of the tag's comment: from a COMPAT line just above it (or the tag) down
    through the whole-line comments after it, at its indentation."""
    indent = len(lines[index]) - len(lines[index].lstrip())

    def comment(i: int) -> bool:
        text = lines[i]
        return text.lstrip().startswith("#") and len(text) - len(text.lstrip()) == indent and not END.match(text)

    first, last = index, index
    above = index
    while above > 0 and comment(above - 1) and not TAG.search(lines[above - 1]):
        above -= 1
        if "COMPAT(" in lines[above]:
            first = above
    while last + 1 < len(lines) and comment(last + 1) and not TAG.search(lines[last + 1]):
        last += 1
    return first, last


def _entries(tree: ast.AST) -> Iterator[tuple[int, int, int, int]]:
    """(first line, first column, last line, end column) of every statement and every entry of a bracket."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            for stmt in block if isinstance(block, list) else ():
                if isinstance(stmt, ast.stmt | ast.excepthandler):
                    decorators = getattr(stmt, "decorator_list", [])
                    start = decorators[0] if decorators else stmt
                    column = start.col_offset - (1 if decorators else 0)
                    yield start.lineno, column, stmt.end_lineno or 0, stmt.end_col_offset or 0
        items: list[ast.expr | ast.keyword] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = list(node.elts)
        elif isinstance(node, ast.Call):
            items = [*node.args, *node.keywords]
        for item in items:
            yield item.lineno, item.col_offset, item.end_lineno or 0, item.end_col_offset or 0
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                first = key if key is not None else value
                column = first.col_offset - (2 if key is None else 0)
                yield first.lineno, column, value.end_lineno or 0, value.end_col_offset or 0


def _next_unit(tag: Tag, lines: list[str], after: int, tree: ast.AST) -> int:
    """The 0-based last line of the statement or entry that starts on the first code line after ``after``."""
    start = after + 1
    while start < len(lines) and (not lines[start].strip() or lines[start].lstrip().startswith("#")):
        start += 1
    if start == len(lines):
        raise TagError(f"{tag.path}:{tag.line}: [next] tag with no code after it")
    column = len(lines[start]) - len(lines[start].lstrip())
    units = [(end, col) for first, at, end, col in _entries(tree) if first == start + 1 and at == column]
    if not units:
        raise TagError(
            f"{tag.path}:{tag.line}: [next] tag: line {start + 1} starts no statement or entry; use [block] ... "
            f"# END CAN REMOVE"
        )
    end, col = max(units)
    rest = lines[end - 1][col:].strip()
    if rest and not rest.startswith("#") and not (rest.startswith(",") and rest[1:].strip()[:1] in ("", "#")):
        raise TagError(
            f"{tag.path}:{tag.line}: [next] tag: the entry ends inside line {end}, which holds more ({rest!r}): "
            f"give it lines of its own"
        )
    return end - 1


def removals(path: Path, text: str, minimum: tuple[int, int]) -> tuple[set[int], bool]:
    """The 0-based lines the tags due at ``minimum`` remove from one file, and whether the whole file goes."""
    lines = text.splitlines()
    due = [tag for tag in tags_in(path, text) if tag.version <= minimum]
    gone: set[int] = set()
    tree: ast.AST | None = None
    for tag in due:
        index = tag.line - 1
        if tag.scope == "file":
            return set(range(len(lines))), True
        if tag.scope == "line":
            gone.add(index)
            continue
        first, last = _comment_run(lines, index)
        if tag.scope == "block":
            ends = [i for i in range(index + 1, len(lines)) if END.match(lines[i])]
            if not ends:
                raise TagError(f"{path}:{tag.line}: [block] tag without a `# END CAN REMOVE` line after it")
            last = ends[0]
        elif tag.scope == "next":
            if path.suffix != ".py":
                raise TagError(f"{path}:{tag.line}: [next] reads Python; in {path.suffix} files use [line]/[block]")
            tree = tree or ast.parse(text, filename=str(path))
            last = _next_unit(tag, lines, last, tree)
        if tag.scope != "tag" and (first == 0 or not lines[first - 1].strip()):  # no blank lines left doubled
            while last + 1 < len(lines) and not lines[last + 1].strip():
                last += 1
        gone.update(range(first, last + 1))
    return gone, False


def _lower_bound(node: ast.expr) -> tuple[int, int]:
    """X.Y of a LINES row's ``SpecifierSet(">=X.Y.Z,<...")``."""
    text = ast.literal_eval(node.args[0]) if isinstance(node, ast.Call) and node.args else None
    found = re.search(r">=\s*(\d+)\.(\d+)", text) if isinstance(text, str) else None
    if found is None:
        raise TagError(
            f'compat/lines.py: a LINES row\'s releases are not SpecifierSet(">=X.Y.Z,..."): {ast.unparse(node)}'
        )
    return int(found.group(1)), int(found.group(2))


def oldest_line(root: Path) -> tuple[str, tuple[int, int], int, int]:
    """The oldest line's module, the release the next line starts at, and the 0-based lines of its LINES row."""
    source = (root / "compat" / "lines.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if getattr(target, "id", "") == "LINES" and isinstance(node.value, ast.Tuple):
                rows = node.value.elts
                if len(rows) < 2:
                    raise NoNextLine("compat/lines.py: LINES has one line: there is no next line to keep")
                first, second = rows[0], rows[1]
                assert isinstance(first, ast.Call) and isinstance(second, ast.Call)
                module = ast.literal_eval(first.args[0])
                start = _lower_bound(second.args[1])
                return module, start, first.lineno - 1, (first.end_lineno or 0) - 1
    raise TagError("compat/lines.py has no LINES tuple of Line(...) rows")


def own_record_ids(folder: Path) -> set[str]:
    """The ids of the records a line's folder declares (``Patch(id="...")``)."""
    ids: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Patch":
                ids.update(
                    str(k.value.value) for k in node.keywords if k.arg == "id" and isinstance(k.value, ast.Constant)
                )
    return ids


# The files holding tables generated per line (the matrices, the scenarios; docs/fixes.md: the version lines)
GENERATED_TABLES = ("README.md", "docs/fixes.md")


def without_line_in_tables(text: str, module: str, record_ids: set[str]) -> str:
    """A file's generated tables without the line: its columns (a header naming ``(module)``) and the rows of
    the module itself or of its own records (a first cell `` `module` `` or `` `id` ``)."""
    out: list[str] = []
    drop: list[int] = []
    gone_rows = {f"`{name}`" for name in (module, *record_ids)}
    for line in text.splitlines(keepends=True):
        if not line.startswith("|"):
            drop = []
            out.append(line)
            continue
        cells = line.rstrip("\n").split("|")[1:-1]
        if not out or not out[-1].startswith("|"):  # a header
            drop = [i for i, cell in enumerate(cells) if f"({module})" in cell]
        if cells and cells[0].strip() in gone_rows:
            continue
        kept = [cell for i, cell in enumerate(cells) if i not in drop]
        out.append("|" + "|".join(kept) + "|\n" if drop else line)
    return "".join(out)


def retire_oldest(root: Path) -> list[str]:
    """Retire the oldest line in ``root`` (a copy): what was removed, one entry per file or tag."""
    if (root / ".git").exists():
        raise SystemExit(f"{root} is a git checkout: retire a copy of it (nox -s retire_oldest makes one)")
    module, minimum, first, last = oldest_line(root)
    done = [f"{module}/ (the folder)"]
    record_ids = own_record_ids(root / module)
    shutil.rmtree(root / module)
    for name in GENERATED_TABLES:
        path = root / name
        path.write_text(without_line_in_tables(path.read_text(), module, record_ids))
        done.append(f"{name}: the tables' {module} columns and rows, and its records' rows")
    lines_py = root / "compat" / "lines.py"
    kept = lines_py.read_text().splitlines(keepends=True)
    lines_py.write_text("".join(kept[:first] + kept[last + 1 :]))
    done.append(f"compat/lines.py: the {module} row of LINES")
    for path in list(source_files(root)):
        text = path.read_text()
        gone, whole = removals(path, text, minimum)
        if whole:
            path.unlink()
            done.append(f"{path.relative_to(root)} (the file)")
        elif gone:
            kept = text.splitlines(keepends=True)
            path.write_text("".join(line for i, line in enumerate(kept) if i not in gone))
            done.append(f"{path.relative_to(root)}: {len(gone)} lines")
    readme = root / "README.md"
    if architecture.START in readme.read_text():  # the picture of what is left: the line's edges are gone
        readme.write_text(architecture.with_picture(readme.read_text(), architecture.picture_of(root)))
        done.append("README.md: the architecture picture redrawn")
    return done


# ------------------------------------------------------------------ code only the retired line needed
RUNTIME = ("compat", "common")


def _defined(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return {name for name in names if not name.startswith("__")}


def _used(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            names.update(WORD.findall(node.value))  # "module:Qual.name", __all__
    return names


WORD = re.compile(r"\w+")


def unused_runtime_names(root: Path) -> set[str]:
    """`folder/module.py:name` for each top-level name of compat/ and common/ that no code of the package (its
    folders, tools included; not tests) uses outside its own definition."""
    parts: dict[Path, list[tuple[set[str], set[str]]]] = {}
    for folder in [path for path in root.iterdir() if (path / "__init__.py").is_file()]:
        for path in folder.rglob("*.py"):
            tree = ast.parse(path.read_text(), filename=str(path))
            parts[path] = [(_defined(ast.Module(body=[node], type_ignores=[])), _used(node)) for node in tree.body]
    used = {path: set().union(*(uses for _, uses in pieces)) for path, pieces in parts.items()}
    unused = set()
    for path, pieces in parts.items():
        if path.relative_to(root).parts[0] not in RUNTIME:
            continue
        for name in set().union(*(defines for defines, _ in pieces)):
            if any(name in names for other, names in used.items() if other != path):
                continue
            if not any(name in uses and name not in defines for defines, uses in pieces):
                unused.add(f"{path.relative_to(root).as_posix()}:{name}")
    return unused


def orphans(before: Path, after: Path) -> list[str]:
    """Runtime names used before the retirement and by nothing after it: code only the retired line needed,
    left untagged."""
    return sorted(unused_runtime_names(after) - unused_runtime_names(before))


def copy_tree(source: Path, copy: Path) -> None:
    """The source tree without VCS, venvs, caches or outputs (SKIP_DIRS), into ``copy``, which must not exist."""
    shutil.copytree(source, copy, ignore=lambda _dir, names: [name for name in names if name in SKIP_DIRS])


def every_line(source: Path, work: Path) -> list[str]:
    """Retire line after line (all but the newest) in copies under ``work``: what each leaves wrong (a runtime name
    only the retired line used, a due tag left, a Python file that no longer parses). No torch needed."""
    problems: list[str] = []
    before, unused_before = source, unused_runtime_names(source)
    while True:
        try:
            module, minimum, _, _ = oldest_line(before)
        except NoNextLine:
            return problems
        after = work / f"without-{module}"
        copy_tree(before, after)
        retire_oldest(after)
        unused_after = unused_runtime_names(after)
        problems += [f"{module}: {name} was used only by it" for name in sorted(unused_after - unused_before)]
        for path in source_files(after):
            text = path.read_text()
            problems += [
                f"{module}: {path}:{t.line}: due tag left" for t in tags_in(path, text) if t.version <= minimum
            ]
            if path.suffix == ".py":
                try:
                    ast.parse(text, filename=str(path))
                except SyntaxError as error:
                    problems.append(f"{module}: {path}: no longer parses: {error}")
        before, unused_before = after, unused_after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the source tree (read only)")
    parser.add_argument("copy", type=Path, help="where to copy it and retire its oldest line (must not exist)")
    parser.add_argument(
        "--every-line", action="store_true", help="also retire each later line in turn (copies under COPY.every)"
    )
    args = parser.parse_args(argv)
    if args.copy.exists():
        parser.error(f"{args.copy} exists: give a new directory for the copy")
    if not (args.source / "compat" / "lines.py").is_file():
        parser.error(f"{args.source} is not this project's source tree (no compat/lines.py)")
    copy_tree(args.source, args.copy)
    try:
        for entry in retire_oldest(args.copy):
            print(f"retired: {entry}")
        left = [
            f"{name} was used only by the retired line: tag it or move it there"
            for name in orphans(args.source, args.copy)
        ]
        if args.every_line:
            work = args.copy.with_name(args.copy.name + ".every")
            work.mkdir()
            left += every_line(args.source, work)
            shutil.rmtree(work)
    except TagError as error:
        print(f"retire: {error}", file=sys.stderr)
        return 2
    for problem in left:
        print(f"retire: {problem}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
