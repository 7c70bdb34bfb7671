"""What differs between two runs of one script on one torch line, normalised away before two codegen outputs are
compared (cache paths, the AOT id, site-packages prefixes, the order of ``&``-joined masks); kernel renames."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# Every rewrite below takes time linear in the text, whatever it holds: a regex that can start anywhere in a long
# token and scan to its end before failing takes minutes on one 400 KB line. The patterns only ever find maximal
# runs (tokens, path segments, mask chains); what to replace inside a run is decided in Python.

_LINE_NOISE = (  # anchored at a line start: linear as they are
    (re.compile(r"^([ \t]*# kernel path:).*$", re.M), r"\1 <inductor cache>"),
    (re.compile(r"^([ \t]*# AOT ID:).*$", re.M), r"\1 <id>"),
)
_TOKEN = re.compile(r"[^\s'\"]+")  # a run without whitespace or quotes: a path is always inside one
_PATH_RUN = re.compile(r"(?:/[^\s'\"/]+)+")  # /segment/segment...
_HASHED = re.compile(r"/c[a-z0-9]{50}")  # a path segment named by a content hash (at least 50 characters)
_HASH_REST = re.compile(r"[a-z0-9]*(\.\w+)?")
_WORDS = re.compile(r"\w+")
_MASK_CHAIN = re.compile(r"(?<!\w)\w*mask(?!\w)(?:\s*&\s*\w*mask(?!\w))+")
_MASK_GAP = re.compile(r"\s*&\s*")
_CHAIN_END = re.compile(r"\s*(?:[)\],]|$)", re.M)  # what may follow a chain: a closing bracket, a comma, a line end
_MASK_OPENERS = "([,=&"  # what may come before a chain: an opening bracket, a comma, `=`, `&`
CACHE, SITE = "/torchinductor_", "/site-packages/"


def _cache_path(found: re.Match[str]) -> str:
    """A token holding a path into Inductor's cache, keeping the last extension after the cache directory."""
    token = found[0]
    start = token.rfind(CACHE)
    if start < 0:
        return token
    rest = token[start + len(CACHE) :]
    dot = rest.rfind(".")
    extension = rest[dot:] if dot >= 0 and _WORDS.fullmatch(rest, dot + 1) else ""
    return "<inductor cache>" + extension


def _hashed_path(found: re.Match[str]) -> str:
    """A run of path segments up to its last content-hash-named segment after the first (and its extension)."""
    run = found[0]
    last = None
    for hashed in _HASHED.finditer(run, 1):
        last = hashed
    if last is None:
        return run
    rest = _HASH_REST.match(run, last.end())
    assert rest is not None  # it matches the empty string
    return f"<inductor cache>{rest[1] or ''}{run[rest.end() :]}"


def _site_packages(found: re.Match[str]) -> str:
    token = found[0]
    start = token.rfind(SITE)
    return token if start < 0 else "<site-packages>/" + token[start + len(SITE) :]


def _sorted_masks(text: str) -> str:
    """Sort each chain of ``&``-joined masks that stands alone in a call, subscript or assignment: a chain of two
    or more mask names, after an opening bracket, a comma, ``=`` or ``&`` and before a closing bracket, a comma
    or a line end (where the chain is cut by a line end, up to there)."""
    out, done = [], 0
    for chain in _MASK_CHAIN.finditer(text):
        words = list(_WORDS.finditer(chain[0]))  # each mask name, with its place in the chain
        gaps = list(_MASK_GAP.finditer(chain[0]))
        if _CHAIN_END.match(text, chain.end()):
            last = len(words) - 1
        else:  # the last mask before `&` on the next line still ends a chain
            cut = [i for i, gap in enumerate(gaps) if "\n" in gap[0].split("&")[0]]
            if not cut:
                continue
            last = cut[-1]
        before = chain.start()
        while before > 0 and text[before - 1].isspace():
            before -= 1
        first = 0 if before > 0 and text[before - 1] in _MASK_OPENERS else 1
        if last - first < 1:
            continue
        start, end = chain.start() + words[first].start(), chain.start() + words[last].end()
        names = sorted(text[start:end].replace(" ", "").split("&"))  # a tab or a line end stays with its name
        out += [text[done:start], " & ".join(names)]
        done = end
    out.append(text[done:])
    return "".join(out)


def normalise(text: str) -> str:
    """Remove what differs between two runs of the same script on the same torch, found by diffing such runs: the
    ``# kernel path:`` comments and every path into Inductor's cache (a fresh temporary directory per run, e.g. the
    ``.cubin`` a C++ wrapper loads), the ``# AOT ID:`` counter, site-packages prefixes, and the order of ``&``-joined
    masks (torch 2.7.1 joins ``xmask & r0_mask`` from a set, so either order comes out). The generated code holds no
    timestamps. Line-preserving: every substitution stays within its line."""
    for pattern, replacement in _LINE_NOISE:
        text = pattern.sub(replacement, text)
    text = _TOKEN.sub(_cache_path, text)
    text = _PATH_RUN.sub(_hashed_path, text)
    text = _TOKEN.sub(_site_packages, text)
    return _sorted_masks(text)


_TRIE_DEPTH = 100  # branch points along one name that the regex may nest (the re module parses them recursively)


def _trie(names: dict[str, str]) -> str:
    """One regex matching the longest of ``names`` that starts here, as a trie: at each position it compares
    characters, never each name in turn (an alternation of N names takes time N times the text's length)."""
    root: dict[str, Any] = {}
    for name in names:
        node = root
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}  # a name ends here ("" is no character)

    def branches(node: dict[str, Any], depth: int) -> str:
        if depth > _TRIE_DEPTH:
            raise RecursionError
        parts = []
        for char in sorted(key for key in node if key):
            child, text = node[char], re.escape(char)
            while len(child) == 1 and "" not in child:  # a run of single characters: no branch to nest
                ((char, child),) = child.items()
                text += re.escape(char)
            parts.append(text + branches(child, depth + 1))
        if "" in node:
            parts.append("")  # last: a longer name is tried first
        return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"

    try:
        return branches(root, 0)
    except RecursionError:  # names nested deeper than the re module parses: the plain alternation, longest first
        return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


def renamer(renames: dict[str, str]) -> Callable[[str], str]:
    """Replace kernel names (B's by A's) in one pass; a name also matches as a suffix (C++'s ``call_<name>``)."""
    if not renames:
        return lambda text: text
    pattern = re.compile("(" + _trie(renames) + r")(?![A-Za-z0-9_])")
    return lambda text: pattern.sub(lambda found: renames[found[1]], text)
