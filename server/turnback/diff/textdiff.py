"""Line diff of one file between two byte contents, shaped like ``git diff``.

Used for the ``snapshot/diff`` result and its code lenses. It is pure Python (stdlib
``difflib`` only) so it can be tested without a repository and reused for any pair of
blobs, whatever stored them.

Conventions, chosen to match ``git diff`` so clients can reuse git-aware tooling:

* Lines are split on ``\\n`` only and keep their ends, so ``\\r\\n`` stays part of the line
  and CRLF files diff line by line like git does.
* Hunk headers are ``@@ -start,count +start,count @@``; a count of 1 is omitted
  (``@@ -5 +5 @@``) and a side with 0 lines starts at the line before (``@@ -0,0 +1,3 @@``).
  ``Hunk`` fields use the same numbers as the header, so ``old_start`` of an insertion is
  the line it goes after.
* When there are no hunks (identical content, a pure rename, an empty added file) the
  ``diff`` text is ``""``, as git prints no ``---``/``+++`` lines then either.
* Paths in the ``---``/``+++`` lines are quoted as git quotes them (``core.quotePath=false``:
  control characters, ``"`` and ``\\`` in C style), with git's tab after a name holding a space.

Speed: ``difflib.SequenceMatcher`` spends most of its time finding the longest match
over whole files. The common prefix and suffix are cut first, and the rest is split at
runs of four lines that occur exactly once on each side (patience diff's anchors, on
runs so that repetitive text has them too), then at single unique lines, as long as
all of them keep their order (the common case: edits, not moved blocks); difflib runs
on the small gaps left, and on any range where unique lines cross, since a chain of
crossing anchors can force a larger diff than needed. Edits in ordinary text get
git's hunks exactly; in highly repetitive text, difflib alone and this both sometimes
change a few more lines than git's minimal diff (15 and 13 of 800 random cases).
"""

from __future__ import annotations

import difflib
import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import add, is_not, ne, sub

from ..core.quoting import quoted
from ..results import FileDiff, Hunk


@dataclass(frozen=True)
class DiffLimits:
    """Size caps above which a side is not line-diffed (``truncated=True`` instead)."""

    # SequenceMatcher is quadratic in the worst case and runs on the server's thread:
    # a few MB of text already takes seconds, and the editor must never stall on a diff.
    max_bytes: int = 2 * 1024 * 1024
    # Line count drives difflib's cost more than bytes do (many short or repeated lines,
    # e.g. lockfiles or minified data); 50k lines still diffs in well under a second.
    max_lines: int = 50_000


BINARY_SNIFF = 8000
_NO_NEWLINE = "\\ No newline at end of file\n"


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte in the first 8000 bytes means binary."""
    return b"\0" in data[:BINARY_SNIFF]


def _split_lines(data: bytes) -> list[bytes]:
    """Split on ``\\n`` only, keeping ends, so ``\\r`` stays inside the line like in git
    (a binary stream's readlines, unlike ``bytes.splitlines``, ends lines at ``\\n`` only)."""
    return io.BytesIO(data).readlines()


def _too_long(data: bytes, lines: list[bytes], limits: DiffLimits) -> bool:
    """More lines than the limit, counted as `data.count(b"\\n") + 1` (a final newline
    starts one more, empty line) from the split the diff needs anyway."""
    return len(lines) + (not data or data.endswith(b"\n")) > limits.max_lines


def _range(start: int, count: int) -> str:
    """Format one side of a hunk header the way git does (``,1`` omitted)."""
    return str(start) if count == 1 else f"{start},{count}"


def _emit(out: list[str], prefix: str, lines: list[bytes]) -> None:
    """Append diff lines, decoding leniently and marking a missing final newline."""
    if not lines:
        return
    # One decode and one replace for the whole slice: every line but a file's last ends
    # with b"\n", which no invalid sequence spans, so the text is what decoding each
    # line on its own gives.
    text = b"".join(lines).decode("utf-8", errors="replace")
    if text.endswith("\n"):
        out.append(prefix + text[:-1].replace("\n", "\n" + prefix) + "\n")
    else:
        out.append(prefix + text.replace("\n", "\n" + prefix) + "\n" + _NO_NEWLINE)


Opcode = tuple[str, int, int, int, int]

#: Lines per anchor: long enough to be unique in repetitive text, short enough to fit
#: between edits a few lines apart.
_RUN = 4
#: Below this nesting, gaps go to difflib whole: a bound on recursion for any input.
_MAX_DEPTH = 40
#: A gap with no unique line bigger than this (lines × lines) is past difflib's
#: quadratic matcher (1,000 × 1,000 repeated lines: ~0.1 s) and goes to `_few_edits`.
_DIFFLIB_CELLS = 1_000_000
#: Steps `_few_edits` may take (about 1 s of Python) before it calls the range replaced.
_MYERS_STEPS = 4_000_000


class _AnchoredMatcher(difflib.SequenceMatcher):
    """A SequenceMatcher whose opcodes come from anchors, with difflib on the gaps."""

    def __init__(self, a: list[bytes], b: list[bytes]) -> None:
        # Not SequenceMatcher.__init__: its index of every line of b (`__chain_b`, a third
        # of a 2,000-line file's diff) serves find_longest_match, which this never calls.
        self.isjunk, self.autojunk, self.a, self.b = None, False, a, b
        self.matching_blocks = self.opcodes = None
        self._codes: list[Opcode] | None = None

    def get_opcodes(self) -> list[Opcode]:
        if self._codes is None:
            raw: list[Opcode] = []
            self._match(0, len(self.a), 0, len(self.b), 0, raw)
            self._codes = _merged(raw)
        return self._codes

    def _match(self, a_lo: int, a_hi: int, b_lo: int, b_hi: int, depth: int, out: list) -> None:
        """Opcodes turning a[a_lo:a_hi] into b[b_lo:b_hi], appended to `out` in order
        (adjacent ones of a kind are joined afterwards, by `_merged`)."""
        a, b = self.a, self.b
        start_a, start_b, end_a, end_b = a_lo, b_lo, a_hi, b_hi
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            a_lo, b_lo = a_lo + 1, b_lo + 1
        while a_hi > a_lo and b_hi > b_lo and a[a_hi - 1] == b[b_hi - 1]:
            a_hi, b_hi = a_hi - 1, b_hi - 1
        out.append(("equal", start_a, a_lo, start_b, b_lo))
        if a_lo == a_hi or b_lo == b_hi:  # only deletions or only insertions are left
            out.append(("delete" if a_lo < a_hi else "insert", a_lo, a_hi, b_lo, b_hi))
        elif set(a[a_lo:a_hi]).isdisjoint(b[b_lo:b_hi]):  # nothing in common: rewritten
            out.append(("replace", a_lo, a_hi, b_lo, b_hi))
        else:
            anchors = None
            if depth < _MAX_DEPTH:
                anchors = _unique_anchors(a, b, a_lo, a_hi, b_lo, b_hi, _RUN) or (
                    _unique_anchors(a, b, a_lo, a_hi, b_lo, b_hi, 1)
                )
            if anchors:
                at_a, at_b = anchors
                i, j = a_lo, b_lo
                # Anchors on consecutive lines of both sides are one run of equal lines:
                # one opcode each (as _merged would join them), gaps matched between runs.
                for first, last in _runs(at_a, at_b):
                    ai, bj = at_a[first], at_b[first]
                    if ai > i or bj > j:
                        self._match(i, ai, j, bj, depth + 1, out)
                    i, j = at_a[last] + 1, at_b[last] + 1
                    out.append(("equal", ai, i, bj, j))
                self._match(i, a_hi, j, b_hi, depth + 1, out)
            elif (a_hi - a_lo) * (b_hi - b_lo) > _DIFFLIB_CELLS:
                out.extend(_few_edits(a, b, a_lo, a_hi, b_lo, b_hi))
            else:
                matcher = difflib.SequenceMatcher(None, a[a_lo:a_hi], b[b_lo:b_hi], False)
                for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                    out.append((tag, a_lo + i1, a_lo + i2, b_lo + j1, b_lo + j2))
        out.append(("equal", a_hi, end_a, b_hi, end_b))


def _few_edits(
    a: Sequence[bytes], b: Sequence[bytes], a_lo: int, a_hi: int, b_lo: int, b_hi: int
) -> list[Opcode]:
    """Opcodes for a large range with no unique line to anchor on (a file of repeated
    lines): Myers' O((N+M)D) diff while the edits are few, else the range replaced whole.
    difflib's matcher is quadratic there: 16,000 repeated lines with one edit took 10 s,
    under the repository's lock."""
    n, m = a_hi - a_lo, b_hi - b_lo
    most = max(8, _MYERS_STEPS // (n + m))
    diagonal = {1: 0}  # diagonal k = x - y → furthest x reached on it
    rounds: list[dict[int, int]] = []
    for edits in range(most + 1):
        rounds.append(dict(diagonal))
        for k in range(-edits, edits + 1, 2):
            down = k == -edits or (k != edits and diagonal[k - 1] < diagonal[k + 1])
            x = diagonal[k + 1] if down else diagonal[k - 1] + 1
            y = x - k
            while x < n and y < m and a[a_lo + x] == b[b_lo + y]:
                x, y = x + 1, y + 1
            diagonal[k] = x
            if x >= n and y >= m:
                return _myers_path(rounds, n, m, a_lo, b_lo)
    return [("replace", a_lo, a_hi, b_lo, b_hi)]


def _myers_path(rounds: list[dict[int, int]], n: int, m: int, a_lo: int, b_lo: int) -> list[Opcode]:
    """The opcodes of the path `_few_edits` found, walked back from its end."""
    out: list[Opcode] = []
    x, y = n, m
    for edits in range(len(rounds) - 1, 0, -1):
        before = rounds[edits]
        k = x - y
        down = k == -edits or (k != edits and before[k - 1] < before[k + 1])
        prev_k = k + 1 if down else k - 1
        prev_x = before[prev_k]
        prev_y = prev_x - prev_k
        mid_x, mid_y = (prev_x, prev_y + 1) if down else (prev_x + 1, prev_y)
        out.append(("equal", a_lo + mid_x, a_lo + x, b_lo + mid_y, b_lo + y))
        if down:
            out.append(("insert", a_lo + prev_x, a_lo + prev_x, b_lo + prev_y, b_lo + mid_y))
        else:
            out.append(("delete", a_lo + prev_x, a_lo + mid_x, b_lo + prev_y, b_lo + prev_y))
        x, y = prev_x, prev_y
    out.append(("equal", a_lo, a_lo + x, b_lo, b_lo + y))
    out.reverse()
    return out


def _runs(at_a: list[int], at_b: list[int]) -> list[tuple[int, int]]:
    """(first, last) positions of each run of anchors that follow each other on both sides."""
    # An anchor continues a run when both its lines are one past the previous anchor's:
    # then `i + j` grows by exactly 2 (neither can grow by less than 1, anchors being in
    # order on both sides). Compared in C over the sums, a run of 2,000 costs no Python step.
    sums = list(map(add, at_a, at_b))
    breaks = list(compress(count(1), map(ne, map(sub, sums[1:], sums), repeat(2))))
    starts = [0, *breaks]
    ends = [k - 1 for k in breaks] + [len(at_a) - 1]
    return list(zip(starts, ends, strict=True))


def _unique_anchors(
    a: Sequence[bytes],
    b: Sequence[bytes],
    a_lo: int,
    a_hi: int,
    b_lo: int,
    b_hi: int,
    width: int,
) -> tuple[list[int], list[int]] | None:
    """The positions on each side of the runs of `width` equal lines that occur once in
    each range, when all of them are in the same order on both sides (each position pair
    is one equal line); None when there are none or they cross."""
    if min(a_hi - a_lo, b_hi - b_lo) < max(2, width):
        return None
    keys_a, keys_b = _keys(a, a_lo, a_hi, width), _keys(b, b_lo, b_hi, width)
    # Every step below is one C loop over the keys: in ordinary text nearly every run is
    # unique, so the repeated ones are counted only when the two sizes say there are some.
    where_a = dict(zip(keys_a, count(a_lo)))  # a unique key's one position
    for key in _repeated(keys_a, len(where_a)) | _repeated(keys_b, len(set(keys_b))):
        where_a.pop(key, None)
    found = list(map(where_a.get, keys_b))
    shared = list(map(is_not, found, repeat(None)))  # the runs unique on both sides
    at_a = list(compress(found, shared))
    if not at_a or at_a != sorted(at_a):
        # Unique lines that cross (a moved block): any one chain of them can force a much
        # larger diff than needed, so leave this range to difflib.
        return None
    return at_a, list(compress(count(b_lo), shared))


def _repeated(keys: list[bytes], distinct: int) -> set[bytes]:
    """The keys that occur more than once, given how many distinct ones there are."""
    if distinct == len(keys):
        return set()
    return {key for key, seen in Counter(keys).items() if seen > 1}


def _keys(lines: Sequence[bytes], low: int, high: int, width: int) -> list[bytes]:
    """Each position's run of `width` lines as one key (lines keep their ends, so the
    joined bytes name the run exactly). Joined bytes cache their hash, which tuples of
    the lines do not: the lookups that follow cost half as much."""
    if width == 1:
        return list(lines[low:high])
    shifted = [lines[low + k : high] for k in range(width)]
    return list(map(b"".join, zip(*shifted, strict=False)))


def _merged(codes: list[Opcode]) -> list[Opcode]:
    """Runs of equal lines joined, and runs of changes joined into one opcode, as difflib
    reports them (so a change block prints all its `-` lines before its `+` lines)."""
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if i1 == i2 and j1 == j2:
            continue
        if out and (out[-1][0] == "equal") == (tag == "equal"):
            _, p1, _, q1, _ = out[-1]
            if tag != "equal":
                tag = "replace" if i2 > p1 and j2 > q1 else "delete" if i2 > p1 else "insert"
            out[-1] = (tag, p1, i2, q1, j2)
        else:
            out.append((tag, i1, i2, j1, j2))
    return out


def _header_name(name: str) -> str:
    """A `---`/`+++` name as git writes it: C-quoted when it must be, and followed by a tab
    when it holds a space (so a patch tool knows where it ends)."""
    shown = quoted(name)
    return shown + "\t" if " " in shown and not shown.startswith('"') else shown


def _status(old: bytes | None, new: bytes | None, old_path: str | None) -> str:
    if old is None:
        return "added"
    if new is None:
        return "deleted"
    return "renamed" if old_path is not None else "modified"


def _hunks(
    a_lines: list[bytes], b_lines: list[bytes], context: int
) -> tuple[list[Hunk], list[str], int, int]:
    """The hunks, the unified body text and the added and deleted line counts."""
    # Compare bytes, not decoded text, so distinct invalid sequences never look equal.
    matcher = _AnchoredMatcher(a_lines, b_lines)
    hunks: list[Hunk] = []
    body: list[str] = []
    additions = deletions = 0
    for group in matcher.get_grouped_opcodes(context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        hunk = Hunk(i1 + (i2 > i1), i2 - i1, j1 + (j2 > j1), j2 - j1)
        hunks.append(hunk)
        body.append(
            f"@@ -{_range(hunk.old_start, hunk.old_lines)}"
            f" +{_range(hunk.new_start, hunk.new_lines)} @@\n"
        )
        for tag, o1, o2, n1, n2 in group:
            if tag == "equal":
                _emit(body, " ", a_lines[o1:o2])
                continue
            _emit(body, "-", a_lines[o1:o2])
            _emit(body, "+", b_lines[n1:n2])
            deletions += o2 - o1
            additions += n2 - n1
    return hunks, body, additions, deletions


def diff_file(
    path: str,
    old: bytes | None,
    new: bytes | None,
    *,
    old_path: str | None = None,
    context: int = 3,
    limits: DiffLimits = DiffLimits(),  # noqa: B008 - frozen, so sharing the default is safe
) -> FileDiff:
    """Diff ``old`` → ``new`` (``None`` meaning the file is absent on that side).

    ``old_path`` is kept only when it differs from ``path`` (then the status is "renamed"
    unless the file was added or deleted). Binary or oversized sides skip the line diff.
    """
    if old_path == path:
        old_path = None
    status = _status(old, new, old_path)
    a = old if old is not None else b""
    b = new if new is not None else b""

    def empty(*, binary: bool = False, truncated: bool = False) -> FileDiff:
        return FileDiff(path, old_path, status, binary, 0, 0, (), "", truncated)

    if is_binary(a) or is_binary(b):
        return empty(binary=True)
    # Bytes first: no split of a side over the byte limit, so the lines stay bounded too.
    if len(a) > limits.max_bytes or len(b) > limits.max_bytes:
        return empty(truncated=True)
    a_lines, b_lines = _split_lines(a), _split_lines(b)
    if _too_long(a, a_lines, limits) or _too_long(b, b_lines, limits):
        return empty(truncated=True)
    hunks, body, additions, deletions = _hunks(a_lines, b_lines, context)
    text = ""
    if hunks:
        old_name = "/dev/null" if old is None else _header_name(f"a/{old_path or path}")
        new_name = "/dev/null" if new is None else _header_name(f"b/{path}")
        text = f"--- {old_name}\n+++ {new_name}\n" + "".join(body)
    return FileDiff(path, old_path, status, False, additions, deletions, tuple(hunks), text)
