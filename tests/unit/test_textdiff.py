"""Tests for turnback.diff.textdiff, cross-checked against the real ``git diff`` where possible."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnback.diff import textdiff
from turnback.diff.textdiff import (
    DiffLimits,
    FileDiff,
    Hunk,
    _AnchoredMatcher,
    diff_file,
    is_binary,
)
from turnback.wire import file_diff


def lines(*items: str) -> bytes:
    return "".join(f"{s}\n" for s in items).encode()


TEN = lines(*(f"  line {i}" for i in range(1, 11)))
TWENTY = lines(*(f"  line {i}" for i in range(1, 21)))


def git_diff(tmp_path: Path, old: bytes | None, new: bytes | None, context: int) -> str:
    """Run ``git diff --no-index`` and keep only ---/+++-less hunk text, funcname stripped."""
    paths = []
    for name, data in (("old", old), ("new", new)):
        if data is None:
            paths.append("/dev/null")
        else:
            p = tmp_path / name
            p.write_bytes(data)
            paths.append(str(p))
    cmd = ["git", "-c", "core.autocrlf=false", "-c", "diff.indentHeuristic=false"]
    cmd += ["diff", "--no-index", "--no-color", "--no-ext-diff", f"-U{context}", *paths]
    proc = subprocess.run(cmd, capture_output=True, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout.decode("utf-8", errors="replace")
    body = out[out.index("\n@@") + 1 :] if "\n@@" in out else ""
    return re.sub(r"^(@@ [^@]* @@).*$", r"\1", body, flags=re.M)


def ours_body(d: FileDiff) -> str:
    """Our diff text without the ---/+++ lines, to compare with git's hunks."""
    return "".join(d.diff.splitlines(keepends=True)[2:])


GIT_CASES = {
    "change-middle": (TEN, TEN.replace(b"line 5\n", b"line five\n")),
    "insert-start": (TEN, b"  new\n" + TEN),
    "append-end": (TEN, TEN + b"  eleven\n"),
    "delete-block": (TWENTY, TWENTY.replace(lines("  line 8", "  line 9", "  line 10"), b"")),
    "two-hunks": (TWENTY, TWENTY.replace(b"line 2\n", b"x\n").replace(b"line 18\n", b"y\n")),
    "gap-6-merged": (TWENTY, TWENTY.replace(b"line 5\n", b"x\n").replace(b"line 12\n", b"y\n")),
    "gap-7-split": (TWENTY, TWENTY.replace(b"line 5\n", b"x\n").replace(b"line 13\n", b"y\n")),
    "old-no-eol": (TEN.rstrip(b"\n"), TEN + b"  eleven\n"),
    "new-no-eol": (TEN, TEN.replace(b"line 10\n", b"line ten")),
    "both-no-eol": (TEN.rstrip(b"\n"), TEN.replace(b"line 10\n", b"line ten")),
    "crlf": (TEN.replace(b"\n", b"\r\n"), TEN.replace(b"\n", b"\r\n").replace(b"5", b"V")),
    "one-line": (b"  a\n", b"  b\n"),
    "empty-to-content": (b"", lines("  a", "  b")),
    "added": (None, lines("  a", "  b", "  c")),
    "deleted": (lines("  a", "  b"), None),
    "utf8": ("  é\n  ü\n".encode(), "  é\n  ß\n".encode()),
}


# Ensures our unified text (headers, no-EOL markers, CRLF) is byte-for-byte what git prints.
@pytest.mark.skipif(shutil.which("git") is None, reason="git CLI not available")
@pytest.mark.parametrize("context", [0, 3, 10])
@pytest.mark.parametrize("case", sorted(GIT_CASES))
def test_matches_git(tmp_path: Path, case: str, context: int) -> None:
    old, new = GIT_CASES[case]
    d = diff_file("f.txt", old, new, context=context)
    assert ours_body(d) == git_diff(tmp_path, old, new, context)
    # Hunk fields agree with the headers we print.
    headers = re.findall(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$", d.diff, flags=re.M)
    parsed = [Hunk(int(a), int(b or 1), int(c), int(e or 1)) for a, b, c, e in headers]
    assert parsed == list(d.hunks)


# Ensures statuses, ---/+++ paths and counts for the four kinds of change.
def test_statuses_and_headers() -> None:
    added = diff_file("n.txt", None, lines("a", "b", "c"))
    assert (added.status, added.old_path, added.additions, added.deletions) == ("added", None, 3, 0)
    assert added.hunks == (Hunk(0, 0, 1, 3),)
    assert added.diff.startswith("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,3 @@\n+a\n")

    deleted = diff_file("d.txt", lines("a", "b"), None)
    assert (deleted.status, deleted.additions, deleted.deletions) == ("deleted", 0, 2)
    assert deleted.hunks == (Hunk(1, 2, 0, 0),)
    assert deleted.diff.startswith("--- a/d.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n")

    modified = diff_file("m.txt", TEN, TEN.replace(b"line 5\n", b"five\n"))
    assert (modified.status, modified.additions, modified.deletions) == ("modified", 1, 1)
    assert modified.hunks == (Hunk(2, 7, 2, 7),)

    renamed = diff_file("new.txt", b"a\n", b"b\n", old_path="old.txt")
    assert (renamed.status, renamed.old_path) == ("renamed", "old.txt")
    assert renamed.diff.startswith("--- a/old.txt\n+++ b/new.txt\n@@ -1 +1 @@\n-a\n+b\n")


# Ensures a pure rename / unchanged file has no hunks and an empty diff text (like git).
def test_identical_content() -> None:
    pure = diff_file("new.txt", TEN, TEN, old_path="old.txt")
    assert (pure.status, pure.hunks, pure.diff, pure.additions) == ("renamed", (), "", 0)
    same = diff_file("x.txt", TEN, TEN, old_path="x.txt")
    assert (same.status, same.old_path, same.diff) == ("modified", None, "")
    assert diff_file("e.txt", None, b"").diff == ""


# Ensures exact hunk numbers for several edits, including insert-only / delete-only hunks.
def test_exact_hunks() -> None:
    ins = diff_file("f", TWENTY, TWENTY.replace(b"  line 10\n", b"  line 10\n  new\n"), context=0)
    assert ins.hunks == (Hunk(10, 0, 11, 1),)
    rm = diff_file("f", TWENTY, TWENTY.replace(b"  line 10\n", b""), context=0)
    assert rm.hunks == (Hunk(10, 1, 9, 0),)
    two = diff_file("f", TWENTY, TWENTY.replace(b"line 2\n", b"x\n").replace(b"line 18\n", b"y\n"))
    assert two.hunks == (Hunk(1, 5, 1, 5), Hunk(15, 6, 15, 6))
    assert (two.additions, two.deletions) == (2, 2)


# Ensures context=0 and context=10 change the hunk extent and grouping as expected.
def test_context_sizes() -> None:
    new = TWENTY.replace(b"line 5\n", b"x\n").replace(b"line 13\n", b"y\n")
    assert diff_file("f", TWENTY, new, context=0).hunks == (Hunk(5, 1, 5, 1), Hunk(13, 1, 13, 1))
    assert diff_file("f", TWENTY, new, context=10).hunks == (Hunk(1, 20, 1, 20),)
    assert diff_file("f", TWENTY, new, context=10).diff.count("\n ") == 18


# Ensures a missing final newline is marked and counted as a changed line.
def test_no_trailing_newline() -> None:
    d = diff_file("f", b"a\nb", b"a\nb\n")
    assert (d.additions, d.deletions) == (1, 1)
    assert d.diff.endswith("-b\n\\ No newline at end of file\n+b\n")


# Ensures CRLF endings stay in the line, so only the edited line differs.
def test_crlf() -> None:
    d = diff_file("f", b"a\r\nb\r\nc\r\n", b"a\r\nB\r\nc\r\n")
    assert (d.additions, d.deletions, d.hunks) == (1, 1, (Hunk(1, 3, 1, 3),))
    assert "-b\r\n+B\r\n" in d.diff


# Ensures binary content on either side skips the line diff but keeps the status.
def test_binary() -> None:
    assert is_binary(b"abc\0def") and not is_binary(b"abc") and not is_binary(b"x" * 8000 + b"\0")
    d = diff_file("img.png", b"text\n", b"\x89PNG\0\0")
    assert (d.binary, d.hunks, d.diff, d.additions, d.deletions) == (True, (), "", 0, 0)
    assert d.status == "modified"
    assert file_diff(diff_file("img.png", None, b"\0"))["binary"] is True


# Ensures oversized input returns truncated fast (no SequenceMatcher) with the right status.
def test_oversized_is_truncated_quickly() -> None:
    big = b"".join(b"%d\n" % (i * 7919 % 100_003) for i in range(400_000))  # ~2.5 MB
    start = time.perf_counter()
    d = diff_file("big.txt", big, big[::-1], old_path="old.txt")
    assert time.perf_counter() - start < 0.5
    assert (d.truncated, d.status, d.hunks, d.diff, d.additions) == (True, "renamed", (), "", 0)
    assert file_diff(d)["truncated"] is True
    many = b"x\n" * 60_000  # small in bytes, over the line limit
    assert diff_file("f", None, many).truncated
    assert diff_file("f", b"a\n", b"b\n", limits=DiffLimits(max_bytes=1)).status == "modified"


# Proves the line limit counts `count("\\n") + 1` lines: a final newline starts one more.
def test_line_limit_counts_the_line_after_a_final_newline() -> None:
    limits = DiffLimits(max_lines=3)
    assert not diff_file("f", None, b"1\n2\n3", limits=limits).truncated
    assert not diff_file("f", None, b"1\n2\n", limits=limits).truncated
    assert diff_file("f", None, b"1\n2\n3\n", limits=limits).truncated
    assert diff_file("f", b"1\n2\n3\n", b"", limits=limits).truncated
    assert not diff_file("f", b"", b"1\n2", limits=DiffLimits(max_lines=2)).truncated
    assert diff_file("f", b"", b"", limits=DiffLimits(max_lines=0)).truncated  # "" is one line


# Ensures the wire shape: camelCase keys, null oldPath, "truncated" omitted when false.
def test_wire_shape() -> None:
    j = file_diff(diff_file("f.txt", b"a\n", b"b\n"))
    assert j == {
        "path": "f.txt",
        "oldPath": None,
        "status": "modified",
        "binary": False,
        "additions": 1,
        "deletions": 1,
        "hunks": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1}],
        "diff": "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n",
    }


line_lists = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"}\n", b"x\n", b"\n"]), max_size=40)


# Ensures the anchored matcher's opcodes cover both sides in order, its equal runs are
# really equal, and applying them to the old lines gives the new ones.
@settings(max_examples=400, deadline=None)
@given(old=line_lists, edits=st.lists(st.tuples(st.integers(0, 40), line_lists), max_size=4))
def test_anchored_opcodes_rebuild_the_new_side(old: list[bytes], edits: list) -> None:
    _check_rebuilds(old, _edited(old, edits))


# Ensures the same of the path that large ranges without a unique line take (Myers' diff,
# or the range replaced whole once its step budget is spent), forced here on small input.
@settings(max_examples=400, deadline=None)
@given(
    old=line_lists,
    edits=st.lists(st.tuples(st.integers(0, 40), line_lists), max_size=4),
    steps=st.integers(0, 300),
)
def test_few_edits_opcodes_rebuild_the_new_side(old: list[bytes], edits: list, steps: int) -> None:
    with patch.object(textdiff, "_DIFFLIB_CELLS", 0), patch.object(textdiff, "_MYERS_STEPS", steps):
        _check_rebuilds(old, _edited(old, edits))


def _edited(old: list[bytes], edits: list) -> list[bytes]:
    new = list(old)
    for at, inserted in edits:
        new[at : at + len(inserted) // 2] = inserted
    return new


def _check_rebuilds(old: list[bytes], new: list[bytes]) -> None:
    codes = _AnchoredMatcher(old, new).get_opcodes()
    i = j = 0
    rebuilt: list[bytes] = []
    for tag, i1, i2, j1, j2 in codes:
        assert (i1, j1) == (i, j) and (i2, j2) != (i1, j1)
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
        rebuilt += new[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(old), len(new)) and rebuilt == new
    kinds = [tag == "equal" for tag, *_ in codes]
    assert all(k != n for k, n in zip(kinds, kinds[1:], strict=False)), "runs must alternate"


# Ensures a large file of repeated lines (no line to anchor on) never reaches difflib's
# quadratic matcher whole (16,000 lines with two edits took it 10 s, under the lock), and
# still diffs as git does.
def test_repeated_lines_skip_the_quadratic_matcher(tmp_path: Path) -> None:
    old, new = [b"x\n"] * 16_000, [b"x\n"] * 16_000
    old[5_000], new[9_000] = b"y\n", b"z\n"
    real = textdiff.difflib.SequenceMatcher

    def small_only(junk, a, b, autojunk=True):  # noqa: ANN001, ANN202
        assert len(a) * len(b) <= textdiff._DIFFLIB_CELLS, "a quadratic match of a large gap"
        return real(junk, a, b, autojunk)

    with patch.object(textdiff.difflib, "SequenceMatcher", small_only):
        ours = diff_file("f.txt", b"".join(old), b"".join(new))
    assert ours_body(ours) == git_diff(tmp_path, b"".join(old), b"".join(new), 3)


# Ensures unique lines that swap places do not anchor a needlessly large diff: git and
# difflib change 4 lines here (found in review; a patience chain changed 8).
def test_crossing_unique_lines_keep_the_diff_small() -> None:
    d = diff_file("f.txt", b"A\nx\nx\nx\nB\n", b"B\nx\nx\nx\nA\n")
    assert d.additions + d.deletions == 4


# Ensures the ---/+++ lines name files as git does (core.quotePath=false): a newline or tab
# in a name is C-quoted (a newline split the header in two, and `git apply` refused the
# patch), and a name holding a space is followed by git's tab.
def test_header_names_are_quoted_like_git(tmp_path: Path) -> None:
    names = ["a b.txt", "n\nl.txt", "t\tb.txt", 'q"q.txt', "plain.txt"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in names:
        (tmp_path / name).write_bytes(b"x\n")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    for name in names:
        (tmp_path / name).write_bytes(b"y\n")
    out = subprocess.run(
        ["git", "-c", "core.quotePath=false", "diff", "--no-color"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = [line for line in out.splitlines() if line.startswith(("--- ", "+++ "))]
    ours = [
        line
        for name in sorted(names, key=lambda n: n.encode())
        for line in diff_file(name, b"x\n", b"y\n").diff.splitlines()
        if line.startswith(("--- ", "+++ "))
    ]
    assert sorted(ours) == sorted(theirs)
