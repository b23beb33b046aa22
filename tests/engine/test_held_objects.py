"""A member repository's watched capture flushes its objects in the workspace's object
database before it answers, and in the member's own only afterwards (heldobjects.py).

In process, on real repositories and the real watcher; the member's late write is held
back by a gate so that each test sees the state between the answer and that write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pygit2
import pytest

from helpers import git, tree_state, write
from helpers.workspace import two_repo_folder
from turnback.engine import Engine
from turnback.snapshot.cachewrite import CacheWriter


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Engine]]:
    """A folder of two repositories, an engine watching it, and a first turn."""
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    if not engine.enable_watcher():
        pytest.skip("no inotify here")
    engine.capture(label="t1")
    try:
        yield ws, engine
    finally:
        engine.close()


def _gate_member_writes(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]
) -> threading.Event:
    """Holds every held-objects write until the returned event is set; runs `then` first."""
    gate = threading.Event()
    real = CacheWriter.start_objects

    def gated(self: CacheWriter, write: Callable[[], None]) -> None:
        def held_back() -> None:
            assert gate.wait(30)
            then()
            write()

        real(self, held_back)

    monkeypatch.setattr(CacheWriter, "start_objects", gated)
    return gate


def _has(repo: Path, oid: str) -> bool:
    return pygit2.Repository(str(repo)).odb.exists(oid)


def _anchored_blob(repo: Path, path: str) -> str | None:
    """The blob the member's stat-cache anchor names at `path`, if it names one."""
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/turnback/").split()
    anchors = [r for r in refs if r.endswith("/index")]
    assert len(anchors) == 1, refs
    found = git(repo, "rev-parse", "--verify", "-q", f"{anchors[0]}:{path}", check=False)
    return found.strip() or None


# Proves the capture answers before the member's own copy of its new blob is written (the
# workspace's is, so the turn is whole), and that the copy, then the anchor naming it,
# follow; git fsck finds both repositories clean.
def test_member_objects_are_written_after_the_answer(watched, monkeypatch):
    ws, engine = watched
    gate = _gate_member_writes(monkeypatch, lambda: None)
    write(ws, "api/main.py", "api v2 by the agent\n")
    engine.capture(label="t2")
    blob = str(pygit2.hash(b"api v2 by the agent\n"))
    workspace_repo = Path(engine.ws.repo.path)
    assert pygit2.Repository(str(workspace_repo)).odb.exists(blob)
    assert not _has(ws / "api", blob)  # not before the answer
    gate.set()
    engine.close()  # settles the member's write
    assert _has(ws / "api", blob)
    assert _anchored_blob(ws / "api", "main.py") == blob
    for repo in (ws / "api", ws / "web"):
        git(repo, "fsck", "--no-progress", "--strict")


# Proves a member write that fails (the disk full, say) loses nothing: the turn was whole in
# the workspace's object database, and the member's next capture starts from its saved
# cache, so undo and redo still give back every byte.
def test_failed_member_write_starts_the_member_over(watched, monkeypatch):
    ws, engine = watched

    def disk_full() -> None:
        raise OSError(28, "No space left on device")

    gate = _gate_member_writes(monkeypatch, disk_full)
    gate.set()
    write(ws, "api/main.py", "api v2\n")
    engine.capture(label="t2")
    monkeypatch.undo()  # the disk has room again
    write(ws, "api/main.py", "api v3\n")
    write(ws, "api/lib/util.py", "util v3\n")
    engine.capture(label="t3")
    after_t3 = tree_state(ws)
    write(ws, "api/main.py", "api v4\n")
    engine.undo()
    assert (ws / "api/main.py").read_text() == "api v3\n"
    engine.undo()
    assert (ws / "api/main.py").read_text() == "api v2\n"
    assert (ws / "api/lib/util.py").read_text() == "util v1\n"
    engine.redo()
    assert tree_state(ws) == after_t3
    engine.close()
    assert _anchored_blob(ws / "api", "lib/util.py") == str(pygit2.hash(b"util v3\n"))
    git(ws / "api", "fsck", "--no-progress", "--strict")
