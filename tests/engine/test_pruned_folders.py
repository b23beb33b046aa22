"""Object writes beside git's real `prune-packed`, which removes every empty `objects/xx`.

The race is git's own: `git gc` ends with `prune-packed`, and a folder libgit2 has just
made for a new object is empty until the object's flush ends and it is linked in. Real
git passes beside the writes make it happen several times a second (a `/tmp` probe with
no pause between `prune-packed` passes: 45 of 600 bare libgit2 blob writes failed).
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo, write
from helpers.env import GIT_ENV
from turnback.core import looseobjects, objectwrites
from turnback.core.durability import enable_git_fsync
from turnback.engine import Engine
from turnback.errors import StorageFailed

#: git's own pass, again and again: every folder left empty is removed.
PRUNE = "git prune-packed"
#: What `git gc --auto` does to loose objects: packed, then pruned with their folders.
REPACK_AND_PRUNE = "git repack -d -q && git prune-packed"


@contextmanager
def pruning(root: Path, passes: str = PRUNE, pause: float = 0.02) -> Iterator[None]:
    """`passes` over and over in `root`, `pause` seconds apart, as long as the block runs."""
    loop = subprocess.Popen(
        ["sh", "-c", f"while :; do {passes}; sleep {pause}; done"],
        cwd=root,
        env=GIT_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        loop.kill()
        loop.wait()


@pytest.fixture
def races(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """Every write failure recognised as the race (the real checks, counted): libgit2's
    writes' and turnback's own loose writes'."""
    seen: list[BaseException] = []
    real = objectwrites.pruned_under

    def counting(error: BaseException) -> bool:
        raced = real(error)
        if raced:
            seen.append(error)
        return raced

    def made_again(folder: Path) -> None:
        seen.append(FileNotFoundError(folder))
        real_made_again(folder)

    real_made_again = looseobjects.made_again
    monkeypatch.setattr(objectwrites, "pruned_under", counting)
    monkeypatch.setattr(looseobjects, "made_again", made_again)
    return seen


# Fails when a blob write that lost the race is not written again, or when a commit
# libgit2 reports written (it drops the error of a commit whose writes both lost) is not.
def test_object_writes_survive_git_pruning_their_folders(tmp_path: Path, races):
    enable_git_fsync()  # as turnback runs: the flush is the window the prune falls in
    repo = pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    author = pygit2.Signature("t", "t@localhost", 0, 0)
    tree = repo.TreeBuilder().write()
    contents: list[bytes] = []
    blobs: list[pygit2.Oid] = []
    commits: list[pygit2.Oid] = []
    with pruning(tmp_path / "bare.git", pause=0):
        # Rounds of 400 of each until git has raced them: on a loaded machine one round
        # can end before the loop's first pass has removed anything, and with a pause
        # between passes ten rounds once went by without a race (a fresh-clone CI run).
        while len(commits) < 8000 and (not commits or not races):
            start = len(commits)
            contents += [f"blob {n}\n".encode() for n in range(start, start + 400)]
            blobs += [objectwrites.write_blob(repo, data) for data in contents[start:]]
            commits += [
                objectwrites.write_commit(repo, author, author, f"turn {n}\n", tree, [])
                for n in range(start, start + 400)
            ]
    assert races, "the prune loop never removed a folder under a write"
    assert [repo[oid].data for oid in blobs] == contents
    fresh = pygit2.Repository(str(tmp_path / "bare.git"))
    assert all(oid in fresh for oid in commits)


# Fails when a commit libgit2 reports written but could not write (its error is dropped
# in libgit2 1.9's git_commit_create) is taken as written: a timeline would name it.
def test_a_commit_libgit2_could_not_write_is_not_taken_as_written(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    author = pygit2.Signature("t", "t@localhost", 0, 0)
    tree = repo.TreeBuilder().write()
    text = repo.create_commit_string(author, author, "turn\n", tree, []).encode()
    oid = hashlib.sha1(b"commit %d\0" % len(text) + text).hexdigest()
    (tmp_path / "bare.git" / "objects" / oid[:2]).write_text("a file where its folder goes")
    with pytest.raises(StorageFailed, match="reported commit .* written, but it is not"):
        objectwrites.write_commit(repo, author, author, "turn\n", tree, [])


# Fails when a capture beside git's prune fails, or records a turn it cannot give back.
def test_captures_beside_git_pruning_record_every_turn(tmp_path: Path, races):
    root = make_repo(tmp_path / "repo", {f"d{n}/f.txt": "v0\n" for n in range(20)})
    engine = Engine(str(root))
    turns = 0
    with pruning(root, REPACK_AND_PRUNE, pause=0):
        while turns < 100 and (turns < 5 or len(races) < 2):  # until git raced it twice
            turns += 1
            engine.capture(session="s")
            for n in range(20):
                write(root, f"d{n}/f.txt", f"v{turns}\n")
            engine.capture(session="s", phase="after")
    assert races, "the prune loop never removed a folder under a write"
    assert len(engine.list("s").turns) == turns
    engine.undo("s")
    assert {(root / f"d{n}/f.txt").read_text() for n in range(20)} == {f"v{turns - 1}\n"}
    engine.close()
