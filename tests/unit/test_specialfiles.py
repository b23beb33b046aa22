"""The special-file walk reuses unchanged directories' listings and still sees every change."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from turnback.core import specialfiles
from turnback.core.specialfiles import SpecialFiles

OLD = 1_600_000_000  # a directory mtime far from now: its listing is trusted


pytestmark = pytest.mark.usefixtures("listings_trusted_at_once")


@pytest.fixture(autouse=True, params=["relative to the tree", "full paths"])
def quick_check_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test twice: the quick check's `lstat`s relative to the tree's folder, and by
    full path, as where `lstat` takes no folder descriptor (Windows)."""
    if request.param == "full paths":

        @contextmanager
        def no_descriptor(_root: str) -> Iterator[None]:
            yield None

        monkeypatch.setattr(specialfiles, "_top_folder", no_descriptor)


def _age(*dirs: Path) -> None:
    for folder in dirs:
        os.utime(folder, (OLD, OLD))


# Proves a FIFO made in a directory whose listing was cached is found (its mtime moved),
# one removed is forgotten, and a directory that becomes a repository is left out.
def test_cached_listings_follow_changes(tmp_path: Path):
    for rel in ("a/b", "c", "excluded"):
        (tmp_path / rel).mkdir(parents=True)
    os.mkfifo(tmp_path / "excluded" / "pipe")
    _age(tmp_path / "a" / "b", tmp_path / "a", tmp_path / "c", tmp_path / "excluded", tmp_path)
    files = SpecialFiles(str(tmp_path))
    assert files.start(["excluded"]).outcome().found == []
    os.mkfifo(tmp_path / "a" / "b" / "pipe")
    assert files.start(["excluded"]).outcome().found == ["a/b/pipe"]
    _age(tmp_path / "a" / "b")
    (tmp_path / "c" / ".git").mkdir()
    os.mkfifo(tmp_path / "c" / "inside")
    assert files.start(["excluded"]).outcome().found == ["a/b/pipe"]  # c is a nested repository
    (tmp_path / "a" / "b" / "pipe").unlink()
    assert files.start(["excluded"]).outcome().found == []


# Proves an unchanged, trusted directory is not listed again (the point of the cache).
def test_unchanged_directory_is_not_listed_again(tmp_path: Path, monkeypatch):
    (tmp_path / "d").mkdir()
    _age(tmp_path / "d", tmp_path)
    files = SpecialFiles(str(tmp_path))
    files.start([]).wait()
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or real(path))
    files.start([]).wait()
    assert listed == []


# Proves the walk that only checks the last walk's directories still sees a new directory
# holding a FIFO, a directory removed, and a changed set of excluded names.
def test_new_and_removed_directories_are_walked_again(tmp_path: Path):
    for rel in ("a", "b", "skip"):
        (tmp_path / rel).mkdir()
    os.mkfifo(tmp_path / "skip" / "pipe")
    _age(tmp_path / "a", tmp_path / "b", tmp_path / "skip", tmp_path)
    files = SpecialFiles(str(tmp_path))
    assert files.start(["skip"]).outcome().found == []
    (tmp_path / "a" / "new").mkdir()
    os.mkfifo(tmp_path / "a" / "new" / "pipe")
    assert files.start(["skip"]).outcome().found == ["a/new/pipe"]
    assert files.start([]).outcome().found == ["a/new/pipe", "skip/pipe"]
    _age(tmp_path / "a" / "new", tmp_path / "a")
    (tmp_path / "a" / "new" / "pipe").unlink()
    (tmp_path / "a" / "new").rmdir()
    os.mkfifo(tmp_path / "b" / "pipe")
    assert files.start([]).outcome().found == ["b/pipe", "skip/pipe"]
    assert files.relisted > 0  # what tells a capture that untracked entries may have moved


# Proves a directory listed anew by the quick check still counts when a removed
# subdirectory sends the walk down the whole tree: a capture reads `relisted` to know that
# untracked entries may have moved.
def test_a_relisted_directory_counts_when_the_walk_starts_over(tmp_path: Path):
    (tmp_path / "a" / "gone").mkdir(parents=True)
    _age(tmp_path / "a" / "gone", tmp_path / "a", tmp_path)
    files = SpecialFiles(str(tmp_path))
    files.start([]).wait()
    (tmp_path / "a" / "gone").rmdir()
    os.utime(tmp_path / "a", (OLD + 60, OLD + 60))  # changed, and long enough ago to trust
    assert files.start([]).outcome().found == []
    assert files.relisted == 1


# Proves a walk queued on the scan's threads that fails raises to the capture waiting for
# it, rather than passing for a walk that found nothing (the thread it ran on lives on).
def test_a_failed_walk_raises_to_the_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    files = SpecialFiles(str(tmp_path))

    def refused(_excluded: frozenset[str]) -> None:
        raise OSError("the walk was refused")

    monkeypatch.setattr(files, "walk", refused)
    with ThreadPoolExecutor(1) as pool:
        walk = files.start([], pool)
        with pytest.raises(OSError, match="refused"):
            walk.outcome()
        assert pool.submit(lambda: "still serving").result() == "still serving"


# Proves a trusted listing is read again once the folder's mode changes: `chmod` moves the
# ctime alone, and a folder made unreadable was taken for the readable one it had been,
# so a capture called its files deleted and an undo deleted them once they were readable.
def test_a_folder_whose_mode_changed_is_listed_again(tmp_path: Path):
    (tmp_path / "d").mkdir()
    _age(tmp_path / "d", tmp_path)
    files = SpecialFiles(str(tmp_path))
    files.start([]).wait()
    files.start([]).wait()
    assert files.relisted == 0  # trusted: nothing moved
    os.chmod(tmp_path / "d", 0o700)
    files.start([]).wait()
    assert files.relisted == 1


# Proves a nested repository whose `.git` is removed stops being reported, though the
# folder above it is unchanged: the quick check asked only the walked folders, and a
# plain folder's captures went on reporting it as a repository.
def test_a_repository_whose_git_is_removed_is_no_longer_nested(tmp_path: Path):
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    _age(tmp_path / "sub", tmp_path)
    files = SpecialFiles(str(tmp_path))
    assert files.start([]).outcome().nested == ["sub"]
    assert files.start([]).outcome().nested == ["sub"]  # from the quick check
    (tmp_path / "sub" / "new.txt").write_text("the nested repository's own\n")
    assert files.start([]).outcome().nested == ["sub"]  # listed again: still a repository
    (tmp_path / "sub" / ".git").rmdir()
    assert files.start([]).outcome().nested == []
