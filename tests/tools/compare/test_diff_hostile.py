"""`diff` on hostile input: paths leading out of an output, symlinks, FIFOs, devices, oversized files and lines,
malformed summaries (by hand and fuzzed with hypothesis). Each must end in exit 2 naming the problem, promptly,
never a traceback, and nothing outside the two outputs may be read."""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from npu_inductor_compat.tools.simulated.codegen.output import MANIFEST, MANIFEST_TOOL, SUMMARY
from npu_inductor_compat.tools.simulated.compare import diff
from npu_inductor_compat.tools.simulated.compare.diff_noise import normalise
from npu_inductor_compat.tools.simulated.compare.diff_values import text_diff

SECRET = "the secret the diff must never print"
KERNEL = "triton_poi_fused_cos_0"
SOURCE = f"""
import triton

@triton_heuristics.pointwise(size_hints={{'x': 512}}, filename=__file__, triton_meta={{'signature': {{'x': 'i32'}}}},
    inductor_meta={{'kernel_name': '{KERNEL}'}})
@triton.jit
def {KERNEL}(x):
    pass
"""
WRAPPER = f"# AOT ID: ['0_forward']\n{KERNEL} = async_compile.triton('{KERNEL}', '''...''', device_str='npu')\n"


def summary_of(files: dict[str, Any]) -> dict[str, Any]:
    return {
        "script": "examples/model.py",
        "torch": "2.12.1",
        "line": "v2_12",
        "fixes": {"flex-backward-symbolic-grid": "applied"},
        "script_error": None,
        "graphs": [
            {"index": 0, "kind": "forward", "forward": None, "status": "ok", "kernels": [KERNEL], "files": files}
        ],
    }


GOOD_FILES = {
    "wrapper": "graph_0/wrapper.py",
    "wrapper_module": None,
    "kernels": {KERNEL: {"defined_with": "triton", "source": f"graph_0/kernels/{KERNEL}.py", "fragment": None}},
}


def write_output(root: Path, summary: dict[str, Any] | None = None, listed: list[str] | None = None) -> Path:
    """A minimal codegen output: one graph, its wrapper and one kernel; ``summary`` replaces summary.json and
    ``listed`` is added to what the manifest lists."""
    (root / "graph_0" / "kernels").mkdir(parents=True)
    (root / "graph_0" / "wrapper.py").write_text(WRAPPER)
    (root / "graph_0" / "kernels" / f"{KERNEL}.py").write_text(SOURCE)
    files = ["graph_0/wrapper.py", f"graph_0/kernels/{KERNEL}.py", SUMMARY, *(listed or [])]
    (root / SUMMARY).write_text(json.dumps(summary_of(GOOD_FILES) if summary is None else summary))
    (root / MANIFEST).write_text(json.dumps({"tool": MANIFEST_TOOL, "version": 1, "files": files}))
    return root


def run(a: Path, b: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = diff.diff_main([str(a), str(b)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("npu_inductor_compat diff: ") and err.count("\n") == 1, err
    assert SECRET not in err
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "SECRET.txt"
    path.write_text(SECRET + "\n")
    return path


@pytest.mark.parametrize("how", ["relative", "absolute"])
@pytest.mark.once
def test_a_kernel_source_outside_the_output_is_refused_unread(
    how: str, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good")
    leak = "../SECRET.txt" if how == "relative" else str(secret)
    files = copy.deepcopy(GOOD_FILES)
    files["kernels"][KERNEL]["source"] = leak
    bad = write_output(tmp_path / "bad", summary_of(files), listed=[leak])
    code, out, err = run(good, bad, capsys)
    assert SECRET not in out
    assert_refused(code, out, err, "not a codegen output", repr(leak), "outside")


@pytest.mark.once
def test_a_symlinked_wrapper_is_followed_only_inside_the_output(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good")
    inside = write_output(tmp_path / "inside")
    (inside / "graph_0" / "wrapper.py").unlink()
    (inside / "graph_0" / "wrapper.py").symlink_to(inside / "graph_0" / "kernels" / f"{KERNEL}.py")
    assert run(good, inside, capsys)[0] == 1  # a symlink within the output is read: its target differs
    bad = write_output(tmp_path / "bad")
    (bad / "graph_0" / "wrapper.py").unlink()
    (bad / "graph_0" / "wrapper.py").symlink_to(secret)
    code, out, err = run(good, bad, capsys)
    assert SECRET not in out
    assert_refused(code, out, err, "not a codegen output", "graph_0/wrapper.py", "outside")


@pytest.mark.once
def test_a_symlinked_summary_leading_outside_is_refused(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good")
    bad = write_output(tmp_path / "bad")
    (bad / SUMMARY).unlink()
    (bad / SUMMARY).symlink_to(secret)
    assert_refused(*run(good, bad, capsys), "not a codegen output", SUMMARY, "outside")


@pytest.mark.once
def test_a_fifo_as_wrapper_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good")
    bad = write_output(tmp_path / "bad")
    fifo = bad / "graph_0" / "wrapper.py"
    fifo.unlink()
    os.mkfifo(fifo)
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(diff.diff_main([str(good), str(bad)])), daemon=True)
    worker.start()
    worker.join(3)
    if worker.is_alive():  # the old diff blocks in open(): give it a writer so the thread ends, and fail
        with open(fifo, "w"):
            pass
        worker.join(3)
        pytest.fail("diff waited on a FIFO")
    captured = capsys.readouterr()
    assert_refused(result[0], captured.out, captured.err, "not a codegen output", "not a regular file")


@pytest.mark.once
def test_a_device_behind_a_symlink_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/zero never ends: read whole, it takes all memory."""
    good = write_output(tmp_path / "good")
    bad = write_output(tmp_path / "bad")
    kernel = bad / "graph_0" / "kernels" / f"{KERNEL}.py"
    kernel.unlink()
    kernel.symlink_to("/dev/zero")
    assert_refused(*run(good, bad, capsys), "not a codegen output", f"graph_0/kernels/{KERNEL}.py")


@pytest.mark.once
def test_a_file_over_the_size_cap_is_refused_naming_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from npu_inductor_compat.tools.simulated.compare import diff_input

    good = write_output(tmp_path / "good")
    bad = write_output(tmp_path / "bad")
    (bad / "graph_0" / "wrapper.py").write_text(WRAPPER + "# padding\n" * 200)
    monkeypatch.setattr(diff_input, "MAX_FILE_BYTES", 1024)
    assert_refused(*run(good, bad, capsys), "not a codegen output", "graph_0/wrapper.py", "over", "1 KiB")
    assert diff_input.describe_size(64 * 1024 * 1024) == "64 MiB"


MALFORMED: dict[str, Any] = {
    "kernels-a-string": lambda files: {**files, "kernels": "triton_poi_fused_cos_0"},
    "kernel-entry-a-list": lambda files: {**files, "kernels": {KERNEL: ["graph_0/kernels/x.py"]}},
    "wrapper-a-list": lambda files: {**files, "wrapper": ["graph_0/wrapper.py"]},
    "source-a-number": lambda files: {**files, "kernels": {KERNEL: {"source": 7}}},
    "source-with-a-nul": lambda files: {**files, "kernels": {KERNEL: {"source": "graph_0/\u0000.py"}}},
}
SAID = {  # what the message names, besides the output
    "kernels-a-string": "graphs[0]: files.kernels must be an object",
    "kernel-entry-a-list": f"graphs[0]: files.kernels[{KERNEL!r}] must be an object",
    "wrapper-a-list": "graphs[0]: files.wrapper must be a relative path or null",
    "source-a-number": f"graphs[0]: files.kernels[{KERNEL!r}].source must be a relative path or null",
    "source-with-a-nul": "'graph_0/\\x00.py' holds a NUL character",
    "fixes-a-list": "'fixes' must be an object or null, not list",
    "script-error-a-string": "'script_error' must be an object or null, not str",
    "deep-nesting": "summary.json: not a codegen output: nested deeper than 64 levels",
}


@pytest.mark.parametrize("damage", list(SAID))
@pytest.mark.once
def test_a_malformed_summary_is_not_a_codegen_output(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_output(tmp_path / "good")
    summary = summary_of(GOOD_FILES)
    listed = []
    if damage in MALFORMED:
        summary["graphs"][0]["files"] = MALFORMED[damage](GOOD_FILES)
        listed = ["graph_0/\u0000.py"]
    elif damage == "fixes-a-list":
        summary["fixes"] = ["flex-backward-symbolic-grid"]
    elif damage == "script-error-a-string":
        summary["script_error"] = "Traceback ..."
    bad = write_output(tmp_path / "bad", summary, listed)
    if damage == "deep-nesting":
        (bad / SUMMARY).write_text('{"graphs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for a, b in ((good, bad), (bad, good)):
        assert_refused(*run(a, b, capsys), f"{bad}", "not a codegen output", SAID[damage])


@pytest.mark.once
def test_a_kernel_source_that_breaks_the_parser_is_compared_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ast.parse raises RecursionError, MemoryError or ValueError (not only SyntaxError) on some text."""
    good = write_output(tmp_path / "good")
    bad = write_output(tmp_path / "bad")
    (bad / "graph_0" / "kernels" / f"{KERNEL}.py").write_text("x = 1" + " + 1" * 50_000 + "\n")
    (bad / "graph_0" / "wrapper.py").write_text("- " * 50_000 + "1\n")
    code, out, err = run(good, bad, capsys)
    assert code == 1 and err == "", err
    assert f"kernel {KERNEL}: heuristic, body (+1 -8) changed" in out
    assert "note: B: not parsed (RecursionError): compared as text" in out
    assert "wrapper.py: +1 -1 lines" in out  # the wrapper too, as text


# normalise() on long lines: every one of these took minutes at 400 KB with the old regexes (quadratic)
LONG_LINES = {
    "no spaces": "x" * 400_000,
    "slashes": "/a" * 200_000,
    "site-packages": "/site-packages" * 28_000,
    "masks": "=amask&" * 57_000 + " x",
    "words": "(" + "a" * 400_000,
    "spaced masks": "(" + "amask & " * 50_000 + "x",
}


@pytest.mark.parametrize("name", list(LONG_LINES))
@pytest.mark.once
def test_normalise_takes_linear_time_on_a_long_line(name: str) -> None:
    line = LONG_LINES[name]
    started = time.perf_counter()
    result = normalise(line)
    spent = time.perf_counter() - started
    # not a speed goal: linear takes milliseconds here and the quadratic regexes took minutes, so a bound far from
    # both tells them apart on a loaded machine (2 s failed at a load of 9 on 2 cores)
    assert spent < 20.0, f"{name}: {spent:.1f} s for {len(line)} characters: quadratic again?"
    assert result.count("\n") == line.count("\n")


# The regexes normalise() used before it was made linear: on ordinary text it must give exactly what they gave.
_OLD_NOISE = (
    (re.compile(r"^([ \t]*# kernel path:).*$", re.M), r"\1 <inductor cache>"),
    (re.compile(r"^([ \t]*# AOT ID:).*$", re.M), r"\1 <id>"),
    (re.compile(r"[^\s'\"]*/torchinductor_[^\s'\"]*?(\.\w+)?(?=['\"\s]|$)", re.M), r"<inductor cache>\1"),
    (re.compile(r"(?:/[^\s'\"/]+)+/c[a-z0-9]{50,}(\.\w+)?"), r"<inductor cache>\1"),
    (re.compile(r"[^\s'\"]*/site-packages/"), "<site-packages>/"),
)
_OLD_MASKS = re.compile(r"(?<=[(\[,=&])(?P<space>\s*)(?P<chain>\w*mask(?:\s*&\s*\w*mask)+)(?=\s*(?:[)\],]|$))", re.M)


def old_normalise(text: str) -> str:
    for pattern, replacement in _OLD_NOISE:
        text = pattern.sub(replacement, text)
    return _OLD_MASKS.sub(
        lambda found: found["space"] + " & ".join(sorted(found["chain"].replace(" ", "").split("&"))), text
    )


PIECES = [
    *"/ '\"\n\t.&()[],=#_x0",
    "/torchinductor_root",
    "/tmp/torchinductor_u/ab/",
    "site-packages/",
    "/site-packages/",
    "c" + "0a" * 26,
    "/c" + "k" * 51,
    ".py",
    ".cubin",
    "xmask",
    "r0_mask",
    "mask",
    " & ",
    "# kernel path: ",
    "# AOT ID: ['0_forward']",
    "\u00a0",
    "é",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
@pytest.mark.once
def test_normalise_gives_what_the_old_regexes_gave(text: str) -> None:
    assert normalise(text) == old_normalise(text)


# Fuzzing: a valid summary with parts replaced by arbitrary JSON (and paths that lead elsewhere)
PATHS = ["graph_0/wrapper.py", f"graph_0/kernels/{KERNEL}.py", "../SECRET.txt", "/etc/hostname", "", ".", "graph_0"]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(PATHS),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["kernels", "source", "index", "kind"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)


def _places(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [where]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*where, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found += _places(item, (*where, position))
    return found


def _replace(document: Any, where: tuple[Any, ...], value: Any) -> Any:
    if not where:
        return value
    parent = document
    for step in where[:-1]:
        parent = parent[step]
    parent[where[-1]] = value
    return document


@pytest.fixture(scope="module")
def fuzz_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "SECRET.txt").write_text(SECRET + "\n")
    return write_output(root / "good"), write_output(root / "bad", listed=PATHS)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.once
def test_fuzzed_summaries_end_in_a_report_or_exit_2_never_a_traceback(
    data: st.DataObject, fuzz_outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = fuzz_outputs
    summary: Any = summary_of(copy.deepcopy(GOOD_FILES))
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        where = data.draw(st.sampled_from(_places(summary)), label="where")
        summary = _replace(summary, where, data.draw(JSON, label="value"))
    (bad / SUMMARY).write_text(json.dumps(summary))
    code, out, err = run(*((good, bad) if data.draw(st.booleans(), label="bad is A") else (bad, good)), capsys)
    assert SECRET not in out + err
    if code == 2:
        assert_refused(code, out, err)
    else:
        assert code in (0, 1) and err == "", (code, err)


def _diff_repeated_lines(tmp_path: Path, size: int, capsys: pytest.CaptureFixture[str]) -> tuple[float, str]:
    """diff of two wrappers of ``size`` characters of two alternating lines, the second differing throughout."""
    pairs = size // 24
    a = write_output(tmp_path / f"a{size}")
    b = write_output(tmp_path / f"b{size}")
    (a / "graph_0" / "wrapper.py").write_text(WRAPPER + "x = 1  # repeated\ny = 2  # repeated\n" * pairs)
    (b / "graph_0" / "wrapper.py").write_text(WRAPPER + "x = 1  # repeated\ny = 3  # repeated\n" * pairs)
    started = time.perf_counter()
    code, out, err = run(a, b, capsys)
    spent = time.perf_counter() - started
    assert code == 1 and err == "", err
    return spent, out


@pytest.mark.once
def test_wrappers_of_repeated_lines_diff_in_linear_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """difflib's matcher (no junk heuristic) is cubic on repeated lines: 10 KB took 30 s, 20 KB minutes."""
    spent = {}
    for size in (10_000, 20_000):
        spent[size], out = _diff_repeated_lines(tmp_path, size, capsys)
        # not a speed goal: linear takes a fraction of a second, the old matcher took 30 s at 10 KB
        assert spent[size] < 20.0, f"{spent[size]:.1f} s for {size} characters: cubic again?"
    assert spent[20_000] < 3 * spent[10_000] + 1.0, f"doubling the input: {spent}"  # cubic: 8 times
    pairs = 20_000 // 24
    assert f"wrapper.py: at most +{2 * pairs - 1} -{2 * pairs - 1} lines" in out, out
    code = diff.diff_main([str(tmp_path / "a20000"), str(tmp_path / "b20000"), "--verbose"])
    assert code == 1 and "too repetitive to align in bounded time" in capsys.readouterr().out


@pytest.mark.once
def test_renaming_takes_time_independent_of_the_number_of_kernel_names() -> None:
    """One regex alternating N names compares each in turn: time N times the text's length."""
    from npu_inductor_compat.tools.simulated.compare.diff_noise import renamer

    text = ("k1_" + "a" * 39 + " ") * 50_000  # 2 MB of near misses
    spent = {}
    for count in (200, 3200):
        rename = renamer({f"k{i}_" + "a" * 40: f"t{i}" for i in range(count)})
        started = time.perf_counter()
        assert rename(text) == text
        spent[count] = time.perf_counter() - started
    assert spent[3200] < 3 * spent[200] + 0.2, f"16 times the names: {spent}"
    # the longest name wins; a name matches as a suffix (C++'s call_<name>), never before a word character
    assert renamer({"k": "a", "call_k": "b", "kk": "c"})("k call_k kk xk k_") == "a b c xa k_"


def _difflib_counts(a: list[str], b: list[str]) -> tuple[int, int]:
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        removed += i2 - i1 if tag in ("replace", "delete") else 0
        added += j2 - j1 if tag in ("replace", "insert") else 0
    return added, removed


LINES = st.lists(st.sampled_from(["x", "y", "", "    del buf0", "return"]), max_size=260)


@settings(max_examples=200, deadline=None)
@given(a=LINES, b=LINES, context=st.integers(0, 4))
@example(a=["x"] * 300 + ["y"], b=["y"] + ["x"] * 300, context=3)  # difflib's junk heuristic shows 600 lines
@pytest.mark.once
def test_the_diff_shown_agrees_with_its_counts(a: list[str], b: list[str], context: int) -> None:
    """The counts are difflib's (no junk heuristic) and the shown diff has as many + and - lines: it showed
    unified_diff's, which on 200 lines or more drops lines repeated in over 1% of them and aligns differently."""
    result = text_diff("".join(line + "\n" for line in a), "".join(line + "\n" for line in b), context, None)
    assert (result.added, result.removed) == _difflib_counts(a, b)
    shown = [line[0] for line in result.lines if not line.startswith("@@")]
    assert (shown.count("+"), shown.count("-")) == (result.added, result.removed)
    if len(b) < 200 and (result.added or result.removed):  # no junk heuristic: unified_diff's own lines
        assert result.lines == list(difflib.unified_diff(a, b, n=context, lineterm=""))[2:]
