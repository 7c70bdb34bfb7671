"""Two texts aligned by their text lines in time linear in their size: difflib's matcher within a work cap, else
anchored on the text lines each side holds once (a region still too repetitive: one block); as unified-diff hunks."""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import accumulate

# difflib's matcher looks up, for each line of A in a range, every place that line holds in B, once per range it
# splits the texts into: on repeated lines that is cubic (10 KB of two alternating lines took 30 s). Its work is
# counted before each lookup and capped at WORK_FLOOR + WORK_PER_LINE per line of the two texts (about 20 million
# comparisons a second): ordinary wrappers and kernels stay under it and align exactly as difflib aligns them.
WORK_FLOOR = 1_000_000
WORK_PER_LINE = 200
Opcode = tuple[str, int, int, int, int]  # difflib's: tag, A's lines [i1, i2), B's lines [j1, j2)


class _OverCap(Exception):
    pass


class _CappedMatcher(difflib.SequenceMatcher[str]):
    """difflib's matcher (no junk heuristic) that raises _OverCap instead of spending more than ``cap`` lookups."""

    def __init__(self, a: Sequence[str], b: Sequence[str], cap: int) -> None:
        in_b = Counter(b)
        # one find_longest_match over A's lines [lo, hi) costs at most _cost[hi] - _cost[lo] lookups
        self._cost = [0, *accumulate(1 + in_b[line] for line in a)]
        self._left, self._lines_a = cap, len(a)
        super().__init__(None, a, b, autojunk=False)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        ahi = self._lines_a if ahi is None else ahi
        self._left -= self._cost[ahi] - self._cost[alo]
        if self._left < 0:
            raise _OverCap
        return super().find_longest_match(alo, ahi, blo, bhi)


def _matched(a: Sequence[str], b: Sequence[str], cap: int) -> tuple[list[Opcode] | None, int]:
    """difflib's opcodes (None when they would take over ``cap`` lookups) and the lookups spent."""
    matcher = _CappedMatcher(a, b, cap)
    try:
        codes: list[Opcode] = [*matcher.get_opcodes()]
    except _OverCap:
        return None, cap
    return codes, cap - matcher._left


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """The longest run, in order on both sides, of lines each side holds exactly once (patience diff's anchors)."""
    in_a, in_b = Counter(a), Counter(b)
    where_b = {line: j for j, line in enumerate(b) if in_b[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if in_a[line] == 1 and line in where_b]
    tails: list[int] = []  # tails[k]: the smallest B position ending an increasing run of k + 1 pairs
    ends: list[int] = []  # the pair index at tails[k]
    before = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        before[index] = ends[k - 1] if k else -1
        if k == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[k], ends[k] = j, index
    chain, index = [], ends[-1] if ends else -1
    while index >= 0:
        chain.append(pairs[index])
        index = before[index]
    return chain[::-1]


def _region(a: Sequence[str], b: Sequence[str], i: int, j: int, cap: int) -> tuple[list[Opcode], int, int]:
    """One stretch between anchors, at A's line i and B's line j: its opcodes, the lookups spent and the lines left
    unaligned (shown as one block) when the cap ran out."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    found, spent = _matched(mid_a, mid_b, cap) if mid_a and mid_b else (None, 0)
    unaligned = len(mid_a) + len(mid_b) if found is None and mid_a and mid_b else 0
    if found is not None:
        codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in found]
    elif mid_a or mid_b:
        tag = "replace" if mid_a and mid_b else "delete" if mid_a else "insert"
        codes.append((tag, head, len(a) - tail, head, len(b) - tail))
    if tail:
        codes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return [(tag, i1 + i, i2 + i, j1 + j, j2 + j) for tag, i1, i2, j1, j2 in codes], spent, unaligned


def align(a: Sequence[str], b: Sequence[str]) -> tuple[list[Opcode], int]:
    """difflib's opcodes turning a into b, and how many lines (of both) were too repetitive to align within the cap
    and so are shown as replaced whole. Work and memory are linear in the number of lines."""
    cap = WORK_FLOOR + WORK_PER_LINE * (len(a) + len(b))
    found, _ = _matched(a, b, cap)
    if found is not None:
        return found, 0
    codes: list[Opcode] = []
    unaligned, left = 0, cap
    i = j = 0
    for anchor_i, anchor_j in [*_anchors(a, b), (len(a), len(b))]:
        share = min(left, WORK_PER_LINE * (anchor_i - i + anchor_j - j) + WORK_PER_LINE)
        region, spent, lost = _region(a[i:anchor_i], b[j:anchor_j], i, j, share)
        left, unaligned = left - spent, unaligned + lost
        codes += region
        if anchor_i < len(a):
            codes.append(("equal", anchor_i, anchor_i + 1, anchor_j, anchor_j + 1))
        i, j = anchor_i + 1, anchor_j + 1
    return _merged(codes), unaligned


def _merged(codes: list[Opcode]) -> list[Opcode]:
    out: list[Opcode] = []
    for code in codes:
        if out and out[-1][0] == code[0] == "equal":
            out[-1] = ("equal", out[-1][1], code[2], out[-1][3], code[4])
        else:
            out.append(code)
    return out


def _hunks(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """The opcodes in hunks with up to ``context`` equal lines around each change (as difflib.unified_diff)."""
    if not codes:
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    hunk: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            hunk.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield hunk
            hunk = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        hunk.append((tag, i1, i2, j1, j2))
    if hunk and not (len(hunk) == 1 and hunk[0][0] == "equal"):
        yield hunk


def _span(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def unified(a: Sequence[str], b: Sequence[str], codes: list[Opcode], context: int) -> list[str]:
    """The unified diff of ``codes`` without its two file-name lines: ``@@ -i,n +j,m @@`` and the lines."""
    out = []
    for hunk in _hunks(codes, context):
        out.append(f"@@ -{_span(hunk[0][1], hunk[-1][2])} +{_span(hunk[0][3], hunk[-1][4])} @@")
        for tag, i1, i2, j1, j2 in hunk:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]] if tag in ("replace", "delete") else []
            out += ["+" + line for line in b[j1:j2]] if tag in ("replace", "insert") else []
    return out
