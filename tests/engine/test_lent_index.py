"""A first capture reads the user's index once: its fresh seed stands for both.

The private index starts as a byte copy of the user's, so until the capture changes it,
it answers every question asked of the user's index (snapshot/userindex.py). These check
that the file is parsed once, that what a capture decides from the lent index is what the
user's own index says, and that the user's index is its own again afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import git, make_repo, write
from turnback.config import Settings
from turnback.core.repository import open_workspace
from turnback.engine import Engine
from turnback.snapshot import userindex
from turnback.snapshot.scanner import Scanner
from turnback.snapshot.untracked import SPECIAL_FILE


def _count_user_index_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loads: list[str] = []
    real = userindex._open
    monkeypatch.setattr(userindex, "_open", lambda path: loads.append(path) or real(path))
    return loads


# Proves a first capture parses the user's index file only once it has answered (on a pool
# thread, for the next capture), and that the user's index is then its own object.
def test_first_capture_lends_the_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    loads = _count_user_index_loads(monkeypatch)
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n", "src/b.txt": "b\n"})
    scanner = Scanner(open_workspace(root))
    seen_during: list[int] = []
    real_walk = scanner.user_index.tracks_dir
    monkeypatch.setattr(
        scanner.user_index,
        "tracks_dir",
        lambda rel: seen_during.append(len(loads)) or real_walk(rel),
    )
    write(root, "new/c.txt", "c\n")  # an untracked directory: the policy asks the index
    scanner.capture(Settings())
    assert seen_during and set(seen_during) == {0}  # every answer came from the seed
    assert scanner.user_index.tracks("src/b.txt") and not scanner.user_index.tracks("new/c.txt")
    assert len(loads) == 1 and scanner.user_index.index is not scanner.private.index
    assert not scanner.user_index.borrowed


# Proves the capture decides from the user's entries, not from the private index it is
# changing: a tracked file (ignored by a rule, added with -f) that became a FIFO is
# reported, which asks the user's index whether that deleted path is tracked.
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_lent_answers_are_the_users_own(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {".gitignore": "*.log\n", "a.txt": "a\n"})
    write(root, "logs/app.log", "kept though ignored\n")
    git(root, "add", "-f", "logs/app.log")
    git(root, "commit", "-qm", "a tracked log")
    (root / "logs" / "app.log").unlink()
    os.mkfifo(root / "logs" / "app.log")
    engine = Engine(str(root))
    turn = engine.capture(label="turn")
    assert ("logs/app.log", SPECIAL_FILE) in {(s.path, s.reason) for s in turn.skipped}


# Proves nothing is lent when the user's index changed after the seed was copied: the
# capture then reads the user's file as it is now.
def test_a_changed_user_index_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    scanner = Scanner(open_workspace(root))
    scanner.private.preload()  # seeds from the index as committed
    write(root, "b.txt", "b\n")
    git(root, "add", "b.txt")  # a new version of the user's index
    loads = _count_user_index_loads(monkeypatch)
    scanner.capture(Settings())
    assert loads and scanner.user_index.tracks("b.txt")
    assert not scanner.user_index.borrowed
