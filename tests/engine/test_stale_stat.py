"""Files rewritten with the bytes they held are hashed by one full scan, not by every one.

After such a rewrite (a checkout there and back, a formatter that changed nothing) the
scan hashes each file to learn it is unchanged; the cache writer then refreshes their
stat data (snapshot/stalestat.py). These count the files libgit2 hashes, through its
perfdata, on a real repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import DiffOption

from helpers import make_repo, write
from turnback.config import Settings
from turnback.core.pygit2_internals import diff_index_to_workdir
from turnback.core.repository import open_workspace
from turnback.snapshot import workdir_scan
from turnback.snapshot.scanner import Scanner
from turnback.snapshot.stalestat import refresh_stale

FILES = {f"dir{d}/f{f}.txt": f"file {d} {f}\n" for d in range(3) for f in range(4)}


def _rewrite_unchanged(root: Path, rels: list[str]) -> None:
    """The same bytes written again, with another mtime, older than the index: libgit2
    hashes a file newer than its index on every scan, whatever its stat (racy git)."""
    for rel in rels:
        path = root / rel
        path.write_bytes(path.read_bytes())
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))


def _hashed_by_a_scan(scanner: Scanner) -> int:
    scanner._cache_writer.settle()
    handle = scanner.handles.idle_handle()
    index = scanner.private.index
    assert index is not None
    _diff, hashed = diff_index_to_workdir(handle, index, DiffOption.INCLUDE_UNTRACKED, None)
    assert hashed is not None
    return hashed


# Proves one full scan after the rewrite leaves the stat cache current: the next scan, and
# a new process's first, hash nothing; the snapshot is the same tree.
def test_rewritten_files_are_hashed_once(tmp_path: Path):
    root = make_repo(tmp_path / "repo", FILES)
    scanner = Scanner(open_workspace(root))
    before = scanner.capture(Settings()).tree
    assert _hashed_by_a_scan(scanner) == 0
    _rewrite_unchanged(root, ["dir0/f1.txt", "dir2/f3.txt", "dir1/f0.txt"])
    assert _hashed_by_a_scan(scanner) == 3  # what every full scan would hash, for good
    assert scanner.capture(Settings()).tree == before
    assert _hashed_by_a_scan(scanner) == 0
    scanner.flush()
    again = Scanner(open_workspace(root))
    assert again.capture(Settings()).tree == before
    assert _hashed_by_a_scan(again) == 0


# Proves the refresh never takes a changed file for an unchanged one: a file given other
# bytes of the same size keeps its old stat data, so the next scan still sees the change.
def test_a_changed_file_of_the_same_size_is_not_refreshed(tmp_path: Path):
    root = make_repo(tmp_path / "repo", FILES)
    scanner = Scanner(open_workspace(root))
    scanner.capture(Settings())
    _rewrite_unchanged(root, ["dir0/f1.txt"])
    write(root, "dir1/f2.txt", "FILE 1 2\n")  # same size, other bytes
    _rewrite_unchanged(root, ["dir1/f2.txt"])
    scanner._cache_writer.settle()
    index = scanner.private.index
    assert index is not None
    assert refresh_stale(scanner.handles.idle_handle(), index, [None])
    diff, hashed = diff_index_to_workdir(
        scanner.handles.idle_handle(), index, DiffOption.INCLUDE_UNTRACKED, None
    )
    assert [d.new_file.path for d in diff.deltas] == ["dir1/f2.txt"] and hashed == 1
    snapshot = scanner.capture(Settings())
    assert pygit2.Repository(str(root))[snapshot.tree]["dir1/f2.txt"].data == b"FILE 1 2\n"


# Proves the groups are found through libgit2's perfdata: without it (as where the DLL does
# not export it) nothing is refreshed and the files are hashed again, as before.
def test_without_perfdata_nothing_is_refreshed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    real = workdir_scan.diff_index_to_workdir
    monkeypatch.setattr(workdir_scan, "diff_index_to_workdir", lambda *args: (real(*args)[0], None))
    root = make_repo(tmp_path / "repo", FILES)
    scanner = Scanner(open_workspace(root))
    scanner.capture(Settings())
    _rewrite_unchanged(root, ["dir0/f1.txt"])
    scanner.capture(Settings())
    assert _hashed_by_a_scan(scanner) == 1
