"""The parallel work-tree scan finds exactly what libgit2's one-thread diff finds.

Each case builds a real repository, changes its work tree in a way the split into path
groups could get wrong (a deleted top-level file, a heavy directory split into its
children, names with pattern characters, ignored and nested repositories), and compares
`start_workdir_diff` on several threads with pygit2's own `Index.diff_to_workdir`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo, write
from turnback.config import Settings
from turnback.core.repository import open_workspace
from turnback.snapshot import scanhandles, workdir_scan
from turnback.snapshot.scanner import SCAN_FLAGS, Scanner
from turnback.snapshot.workdir_scan import plan_groups, start_workdir_diff

ODD_NAMES = ["with space.txt", "star*.txt", "br[ack]et.txt", "q?.txt", "ünï.txt", "!bang"]


def _repository(root: Path) -> Path:
    files = {".gitignore": "build/\n*.log\n", "top.txt": "top\n", "gone-top.txt": "x\n"}
    for d in range(6):
        for f in range(4):
            files[f"dir{d}/sub/f{f}.txt"] = f"{d} {f}\n"
    for f in range(40):  # one heavy directory, so the plan splits it into its children
        files[f"heavy/part{f % 5}/f{f}.txt"] = f"heavy {f}\n"
        files[f"heavy/loose{f}.txt"] = f"loose {f}\n"
    for name in ODD_NAMES:
        files[f"odd/{name}"] = name + "\n"
        files[name] = name + "\n"
    make_repo(root, files)
    return root


def _change_work_tree(root: Path) -> None:
    (root / "gone-top.txt").unlink()
    shutil.rmtree(root / "dir1")
    write(root, "dir0/sub/f0.txt", "changed\n")
    write(root, "new-top.txt", "new\n")
    write(root, "newdir/deep/n.txt", "new dir\n")
    write(root, "heavy/part3/added.txt", "added\n")
    write(root, "heavy/loose3.txt", "loose changed, same size? no\n")
    write(root, "build/out.o", "ignored\n")
    write(root, "debug.log", "ignored\n")
    write(root, "odd/br[ack]et.txt", "changed\n")
    write(root, "star-new*.txt", "untracked with a star\n")
    (root / "dir2/sub/f1.txt").unlink()
    os.symlink("top.txt", root / "dir2/sub/f1.txt")  # a file became a symlink
    (root / "dir3/sub/f2.txt").unlink()
    write(root, "dir3/sub/f2.txt/inside.txt", "a file became a directory\n")
    make_repo(root / "nested", {"n.txt": "nested\n"})


def _deltas(found: list[pygit2.DiffDelta]) -> list[tuple[int, str, str]]:
    return sorted((d.status, d.old_file.path, d.new_file.path) for d in found)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_parallel_scan_matches_one_thread(tmp_path: Path, monkeypatch, threads: int):
    """Every delta the one-thread diff reports, no more and no fewer, on 2-4 threads."""
    monkeypatch.setattr(workdir_scan, "PARALLEL_FROM", 1)
    root = _repository(tmp_path / "repo")
    _change_work_tree(root)
    repo = pygit2.Repository(str(root))
    index = pygit2.Index(str(root / ".git" / "index"))
    index._repo = repo
    expected = _deltas(list(index.diff_to_workdir(SCAN_FLAGS).deltas))
    assert plan_groups(str(root), index, threads) is not None  # really split
    repos = [pygit2.Repository(str(root)) for _ in range(threads)]
    assert _deltas(start_workdir_diff(repos, index, SCAN_FLAGS, str(root)).result()) == expected
    assert any(new.startswith("heavy/part3/") for _status, _old, new in expected)


def test_plan_splits_a_heavy_directory_and_covers_every_name(tmp_path: Path, monkeypatch):
    """The heavy directory is split into its children; every top-level name lands in one group."""
    monkeypatch.setattr(workdir_scan, "PARALLEL_FROM", 1)
    root = _repository(tmp_path / "repo")
    (root / "gone-top.txt").unlink()
    index = pygit2.Index(str(root / ".git" / "index"))
    groups = plan_groups(str(root), index, 2)
    assert groups is not None
    paths = [os.fsdecode(p) for group in groups for p in group]
    assert len(paths) == len(set(paths))
    assert "heavy" not in paths and "heavy/part0" in paths and "heavy/loose0.txt" in paths
    assert "gone-top.txt" in paths  # tracked, deleted from disk: still scanned, so reported
    assert ".git" not in paths


def test_full_scan_capture_is_the_same_on_one_thread_and_many(tmp_path: Path, monkeypatch):
    """A full-scan capture writes the same tree, and reports the same skips, on 1 or 3 threads."""
    monkeypatch.setattr(workdir_scan, "PARALLEL_FROM", 1)
    root = _repository(tmp_path / "repo")
    Scanner(open_workspace(root)).capture(Settings())
    _change_work_tree(root)
    found = []
    for count in (1, 3):
        monkeypatch.setattr(scanhandles, "threads", lambda count=count: count)
        snapshot = Scanner(open_workspace(root)).capture(Settings())  # warm: the saved cache
        found.append((snapshot.tree, snapshot.skipped))
    assert found[0] == found[1]
    assert any(s.path == "nested" for s in found[0][1])
