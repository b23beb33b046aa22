"""A full scan's tree, written path-wise from the last one, is the tree of its index.

Each capture writes its tree with `tree_with` from the tree before and the paths the scan
touched (snapshot/indextree.py), not with libgit2's `write_tree`; the first one too, from
the seed's tree, when the user's index holds a cache-tree that names it. These
compare the two after every kind of change a turn makes, in a real repository, and check
the safety net: a path-wise tree that differs is caught by the cache writer's refresh.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from helpers import git, make_repo, write
from turnback.config import Settings
from turnback.core.repository import open_workspace
from turnback.snapshot import indextree, scanhandles, workdir_scan
from turnback.snapshot.scanner import Scanner


def _scan_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread handles even for a small index: the cache writer refreshes with one."""
    monkeypatch.setattr(workdir_scan, "PARALLEL_FROM", 1)
    monkeypatch.setattr(scanhandles, "PARALLEL_FROM", 1)
    monkeypatch.setattr(scanhandles, "threads", lambda: 2)


def _repository(root: Path) -> Path:
    files = {".gitignore": "*.log\nbuild/\n", "top.txt": "top\n", "run.sh": "echo\n"}
    for d in range(4):
        for f in range(3):
            files[f"dir{d}/sub/f{f}.txt"] = f"{d} {f}\n"
    return make_repo(root, files)


def _symlink(root: Path, rel: str, target: str) -> None:
    (root / rel).unlink()
    os.symlink(target, root / rel)


def _file_becomes_directory(root: Path) -> None:
    (root / "dir1/sub/f0.txt").unlink()
    write(root, "dir1/sub/f0.txt/inside.txt", "was a file\n")


def _directory_becomes_file(root: Path) -> None:
    shutil.rmtree(root / "dir2/sub")
    write(root, "dir2/sub", "was a directory\n")


def _ignore_what_was_captured(root: Path) -> None:
    write(root, ".gitignore", "*.log\nbuild/\nnotes/\n")  # notes/ was captured untracked


def _untrack_an_ignored_file(root: Path) -> None:
    write(root, "keep.log", "tracked though ignored\n")
    git(root, "add", "-f", "keep.log")


#: Turns, applied one after another to the same work tree: each is one capture.
TURNS: list[tuple[str, Callable[[Path], None]]] = [
    ("edit", lambda root: write(root, "dir0/sub/f1.txt", "edited\n")),
    ("new untracked directory", lambda root: write(root, "notes/a/b.txt", "new\n")),
    ("delete", lambda root: (root / "dir3/sub/f2.txt").unlink()),
    ("file becomes a directory", _file_becomes_directory),
    ("directory becomes a file", _directory_becomes_file),
    ("symlink", lambda root: _symlink(root, "dir0/sub/f0.txt", "../../top.txt")),
    ("executable bit", lambda root: (root / "run.sh").chmod(0o755)),
    ("ignored output", lambda root: write(root, "build/out.o", "ignored\n")),
    ("ignore rules drop captured files", _ignore_what_was_captured),
    ("tracked though ignored", _untrack_an_ignored_file),
    ("untracked again", lambda root: git(root, "rm", "-q", "--cached", "keep.log")),
    ("nothing changed", lambda root: None),
]


@pytest.mark.parametrize("parallel", [False, True])
def test_pathwise_tree_is_the_index_tree_after_every_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool
):
    """After each turn, the captured tree is what libgit2 writes from the same index."""
    if parallel:  # scan threads, so the cache writer refreshes the cache-tree too
        _scan_on_threads(monkeypatch)
    pathwise = []
    original = indextree.tree_with
    monkeypatch.setattr(indextree, "tree_with", lambda *args: pathwise.append(1) or original(*args))
    root = _repository(tmp_path / "repo")
    ws = open_workspace(root)
    scanner = Scanner(ws)
    scanner.capture(Settings())
    for name, turn in TURNS:
        turn(root)
        snapshot = scanner.capture(Settings())
        scanner.flush()
        whole = scanner.private.index.write_tree(ws.repo)  # type: ignore[union-attr]
        assert snapshot.tree == whole, name
        assert not scanner._cache_writer.tree_differed, name
        assert bool(scanner.handles.thread_repos) == parallel  # the refresh ran when parallel
    assert len(pathwise) == len(TURNS) + 1  # every capture took the path-wise write
    tree = ws.repo[snapshot.tree]
    assert "keep.log" not in tree and "notes" not in tree  # ignored, untracked: dropped
    assert tree["dir2/sub"].type_str == "blob" and "dir1/sub/f0.txt/inside.txt" in tree


def test_a_new_process_takes_the_saved_tree_and_stays_pathwise(tmp_path: Path):
    """The saved index's tree is the anchored one: the next scanner writes path-wise too."""
    root = _repository(tmp_path / "repo")
    first = Scanner(open_workspace(root))
    first.capture(Settings())
    write(root, "dir0/sub/f1.txt", "edited\n")
    before = first.capture(Settings()).tree
    first.flush()
    second = Scanner(open_workspace(root))
    write(root, "dir1/sub/f1.txt", "edited too\n")
    after = second.capture(Settings()).tree
    second._cache_writer.settle()  # the write reads the index: never beside another use
    assert second.private.index.write_tree(second.ws.repo) == after  # type: ignore[union-attr]
    assert after != before and "dir1/sub/f1.txt" in second.ws.repo[after]


def test_a_pathwise_tree_that_differs_is_caught_and_the_next_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """If the path-wise write ever missed a path, the cache writer's refresh tells, and the
    scanner writes its next tree whole instead of building on a wrong one."""
    _scan_on_threads(monkeypatch)
    root = _repository(tmp_path / "repo")
    scanner = Scanner(open_workspace(root))
    scanner.capture(Settings())
    original = indextree.tree_with
    monkeypatch.setattr(indextree, "tree_with", lambda repo, base, changes: base.id)  # misses all
    write(root, "dir0/sub/f1.txt", "edited\n")
    wrong = scanner.capture(Settings()).tree
    scanner._cache_writer.settle()
    assert scanner._cache_writer.tree_differed
    monkeypatch.setattr(indextree, "tree_with", original)
    write(root, "top.txt", "edited too\n")
    right = scanner.capture(Settings()).tree
    assert right != wrong
    scanner._cache_writer.settle()  # (found segfaulting in CI: two threads on one index)
    assert right == scanner.private.index.write_tree(scanner.ws.repo)  # type: ignore[union-attr]
    assert pygit2.Repository(str(root))[right]["dir0/sub/f1.txt"].data == b"edited\n"


def _every_kind_of_change(root: Path) -> None:
    for _name, turn in TURNS[:8]:  # edits, new, deleted, type changes, ignored output
        turn(root)


def _pathwise_bases(monkeypatch: pytest.MonkeyPatch) -> list[pygit2.Oid]:
    """The tree each path-wise write starts from, as the captures make them."""
    bases: list[pygit2.Oid] = []
    original = indextree.tree_with

    def noting(repo: pygit2.Repository, base: pygit2.Tree, changes: dict) -> pygit2.Oid:
        bases.append(base.id)
        return original(repo, base, changes)

    monkeypatch.setattr(indextree, "tree_with", noting)
    return bases


# Proves the first capture's tree, written path-wise from the seed's cache-tree, is the
# tree libgit2 writes from the same index, after every kind of change a turn makes.
def test_first_capture_starts_from_the_seeds_cached_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    bases = _pathwise_bases(monkeypatch)
    root = _repository(tmp_path / "repo")
    head_tree = pygit2.Repository(str(root)).head.peel(pygit2.Tree).id
    _every_kind_of_change(root)
    scanner = Scanner(open_workspace(root))
    snapshot = scanner.capture(Settings())
    assert bases == [head_tree]  # the seed's tree, as the commit left the cache-tree
    scanner._cache_writer.settle()
    assert snapshot.tree == scanner.private.index.write_tree(scanner.ws.repo)  # type: ignore[union-attr]
    tree = scanner.ws.repo[snapshot.tree]
    assert "notes/a/b.txt" in tree and "dir3/sub/f2.txt" not in tree and "build" not in tree
    assert tree["dir2/sub"].type_str == "blob" and tree["run.sh"].filemode == 0o100755


# Proves a user's index whose cache-tree `git add` voided gives the first capture no base:
# libgit2 writes that tree whole, and it is the same tree.
def test_first_capture_without_a_cached_tree_writes_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    bases = _pathwise_bases(monkeypatch)
    root = _repository(tmp_path / "repo")
    write(root, "staged.txt", "staged\n")
    git(root, "add", "staged.txt")  # voids the root's cache-tree entry
    _every_kind_of_change(root)
    scanner = Scanner(open_workspace(root))
    snapshot = scanner.capture(Settings())
    assert bases == []
    scanner._cache_writer.settle()
    assert snapshot.tree == scanner.private.index.write_tree(scanner.ws.repo)  # type: ignore[union-attr]
    assert "staged.txt" in scanner.ws.repo[snapshot.tree]
