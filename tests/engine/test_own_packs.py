"""A capture's few objects go into one pack, unpacked into loose objects once it has
answered (core/ownpacks.py, snapshot/unpacking.py), against real git."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pygit2
import pytest

from helpers import git, listed_packs, loose_objects, make_repo, pack_names, write
from turnback.core import ownpacks
from turnback.core.locking import repository_lock
from turnback.core.ownpacks import pack_ids
from turnback.core.packfile import write_pack
from turnback.engine import Engine
from turnback.history.context import RestoreOptions


@pytest.fixture(autouse=True)
def _unpacking_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism is switched off in the product (ownpacks.py says why); these tests
    keep it working for the day its deletion is made safe beside git's gc."""
    monkeypatch.setattr(ownpacks, "UNPACK_AFTER_CAPTURE", True)


def _turns(root: Path, engine: Engine, count: int, start: int = 0) -> None:
    """`count` sealed turns, each editing two files, each unpacked before the next."""
    for i in range(start, start + count):
        engine.capture(label=f"turn {i}")
        write(root, f"src/t{i % 3}.txt", f"turn {i}\n")
        write(root, f"deep/a/b/c/n{i % 2}.txt", f"nested {i}\n")
        engine.capture(phase="after")
        engine.unpacking.wait()


def _held_back(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Unpacking waits for the event, as if the capture's thread had not let it run yet."""
    go_on = threading.Event()
    real = ownpacks.OwnPacks.unpack

    def held_back(self, repo, pause):
        go_on.wait(timeout=30)
        return real(self, repo, pause)

    monkeypatch.setattr(ownpacks.OwnPacks, "unpack", held_back)
    return go_on


def _turn_left_packed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> tuple[Path, Engine, threading.Event]:
    """A sealed turn that wrote `rel`, its packs listed and not unpacked until the event."""
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    go_on = _held_back(monkeypatch)
    engine.capture(label="turn")
    write(root, rel, "written by the turn\n")
    engine.capture(phase="after")
    return root, engine, go_on


# Proves a turn's objects are one listed pack when the capture answers, and loose (the
# pack gone, the list empty) once unpacked: what git's incremental repack deltifies.
def test_a_turn_writes_one_pack_then_unpacks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    engine.unpacking.wait()
    before, loose_before = pack_names(root), loose_objects(root)
    go_on = _held_back(monkeypatch)
    write(root, "src/app.py", "print('v2')\n")

    engine.capture(phase="after")

    (new,) = pack_names(root) - before
    ids = {raw.hex() for raw in pack_ids(root / f".git/objects/pack/{new}.idx")}
    assert listed_packs(root) == [new] and not ids & loose_objects(root)
    assert len(ids) >= 3  # the blob, the trees above it, the anchor commit
    go_on.set()
    engine.unpacking.wait()
    assert pack_names(root) == before and listed_packs(root) == []
    assert ids <= loose_objects(root) - loose_before
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Proves many turns lose no object to unpacking: every turn undoes and redoes, git fsck
# is clean, and no pack of turnback's is left.
def test_turns_unpacked_all_undo_and_redo(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    packs = pack_names(root)

    _turns(root, engine, 12)

    assert pack_names(root) == packs and listed_packs(root) == []
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    after = (root / "src/t0.txt").read_bytes()
    engine.undo(options=RestoreOptions(count=12))
    assert not (root / "deep").exists()
    engine.redo(options=RestoreOptions(count=12))
    assert (root / "src/t0.txt").read_bytes() == after


# Proves a capture answers before its pack is unpacked, and a capture taken meanwhile
# neither waits for unpacking nor disturbs it.
def test_a_capture_answers_before_unpacking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    go_on = _held_back(monkeypatch)
    engine.capture(label="turn 0")
    write(root, "src/t0.txt", "turn 0\n")
    engine.capture(label="turn 1")  # the thread still waits: this capture does not
    write(root, "src/t1.txt", "turn 1\n")
    engine.capture(label="turn 2")

    assert len(listed_packs(root)) >= 2 and engine.unpacking._thread.is_alive()
    go_on.set()
    engine.unpacking.wait()
    engine.capture(label="turn 3")  # lists the packs the first thread left, if any
    engine.unpacking.wait()
    assert listed_packs(root) == []
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Proves unpacking writes nothing while an operation holds the repository's lock (its
# flushes would queue before the operation's), and finishes once the lock is free.
def test_unpacking_waits_for_a_running_operation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    engine.unpacking.wait()
    go_on = _held_back(monkeypatch)
    write(root, "src/app.py", "print('v2')\n")
    engine.capture(phase="after")
    (pack,) = listed_packs(root)
    ids = {raw.hex() for raw in pack_ids(root / f".git/objects/pack/{pack}.idx")}

    with repository_lock(engine.ws.lock_path):  # as a capture or an undo would
        go_on.set()
        time.sleep(0.5)
        assert listed_packs(root) == [pack] and not ids & loose_objects(root)
    engine.unpacking.wait()

    assert listed_packs(root) == [] and ids <= loose_objects(root)


# Ensures a pack whose objects did not all land loose is never deleted: the capture's
# objects stay readable, the pack stays listed for the next try.
def test_a_pack_not_wholly_unpacked_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    engine.unpacking.wait()
    real = ownpacks.OwnPacks._loose_path
    monkeypatch.setattr(ownpacks.OwnPacks, "_loose_path", lambda self, raw: real(self, raw[::-1]))
    write(root, "src/app.py", "print('v2')\n")

    engine.capture(phase="after")
    engine.unpacking.wait()

    (kept,) = listed_packs(root)
    assert kept in pack_names(root)
    monkeypatch.setattr(ownpacks.OwnPacks, "_loose_path", real)
    write(root, "src/app.py", "print('v3')\n")
    engine.capture(label="next")  # its own pack, and the one left, unpacked now
    engine.unpacking.wait()
    assert kept not in pack_names(root) and listed_packs(root) == []
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures a pack the user marked with .keep is never deleted (its objects are loose too).
def test_a_kept_pack_is_never_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root, engine, go_on = _turn_left_packed(tmp_path, monkeypatch, "src/app.py")
    kept = listed_packs(root)[-1]
    (root / f".git/objects/pack/{kept}.keep").write_text("mine\n")

    go_on.set()
    engine.unpacking.wait()

    assert kept in pack_names(root) and listed_packs(root) == []
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures that where a multi-pack-index may name packs, turnback neither writes nor deletes
# packs: a small turn's objects are loose at once, as before.
def test_a_multi_pack_index_keeps_objects_loose(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 1)
    git(root, "repack", "-adq")
    git(root, "multi-pack-index", "write")
    before = pack_names(root)

    _turns(root, engine, 3, start=1)

    assert pack_names(root) == before and listed_packs(root) == []
    git(root, "multi-pack-index", "verify")
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures the user's `git gc` between a capture and its unpacking (which repacks the
# listed pack away) leaves nothing to unpack and nothing lost.
def test_git_gc_before_unpacking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root, engine, go_on = _turn_left_packed(tmp_path, monkeypatch, "deep/a/b.txt")
    git(root, "gc", "-q", "--prune=now")

    go_on.set()
    engine.unpacking.wait()

    assert listed_packs(root) == []
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    engine.undo()
    assert not (root / "deep").exists()


# Ensures a pack list that cannot be written never fails a capture: the turn's pack is
# already durable (it stays a pack), and the turn undoes.
def test_an_unwritable_list_never_fails_a_capture(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 1)
    (root / ".git/turnback/packs").unlink(missing_ok=True)
    (root / ".git/turnback/packs").mkdir()

    _turns(root, engine, 2, start=1)

    engine.undo(options=RestoreOptions(count=3))
    assert not (root / "deep").exists()
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Proves pack_ids reads back exactly the ids write_pack indexed, and refuses other files.
def test_pack_ids_round_trip(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    blobs = [repo.create_blob(f"blob {i}\n".encode()) for i in range(300)]
    objects = [(oid.raw, 3, repo[oid].data) for oid in blobs]
    pack = write_pack(Path(repo.path) / "objects/pack", len(objects), iter(objects))
    assert pack_ids(pack.with_suffix(".idx")) == sorted(oid.raw for oid in blobs)
    shutil.copyfile(pack, tmp_path / "not.idx")
    with pytest.raises(ValueError):
        pack_ids(tmp_path / "not.idx")
