"""One pack per capture, merged as they add up (core/ownpacks.py), against real git."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pygit2
import pytest

from helpers import git, make_repo, write
from turnback.core import ownpacks
from turnback.core.ownpacks import OwnPack, merge_due, pack_ids
from turnback.core.packfile import write_pack
from turnback.engine import Engine
from turnback.history.context import RestoreOptions


def _packs(root: Path) -> set[str]:
    return {p.stem for p in (root / ".git/objects/pack").glob("pack-*.pack")}


def _listed(root: Path) -> list[str]:
    path = root / ".git/turnback/packs"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def _turns(root: Path, engine: Engine, count: int, start: int = 0) -> None:
    """`count` sealed turns, each editing two files."""
    for i in range(start, start + count):
        engine.capture(label=f"turn {i}")
        write(root, f"src/t{i % 3}.txt", f"turn {i}\n")
        write(root, f"deep/a/b/c/n{i % 2}.txt", f"nested {i}\n")
        engine.capture(phase="after")
        engine.pack_merges.wait()  # merges run once a capture has answered


def _every_object(root: Path) -> set[str]:
    """Every object id in the repository's packs and loose folders."""
    found = set()
    for idx in (root / ".git/objects/pack").glob("*.idx"):
        found |= {raw.hex() for raw in pack_ids(idx)}
    for loose in (root / ".git/objects").glob("[0-9a-f][0-9a-f]/*"):
        found.add(loose.parent.name + loose.name)
    return found


@pytest.fixture
def small_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ownpacks, "MERGE_AT", 3)


# Proves a small turn writes its objects as one pack of turnback's, not one loose file each.
def test_a_small_turn_writes_one_listed_pack(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    before = _packs(root)
    write(root, "src/app.py", "print('v2')\n")

    engine.capture(phase="after")

    new = _packs(root) - before
    assert len(new) == 1 and new <= set(_listed(root))
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Proves many turns leave a bounded number of packs, lose no object, and read back whole.
def test_merges_keep_every_object_and_bound_the_packs(tmp_path: Path, small_merges: None):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    seen: set[str] = set()
    most = 0
    for round_ in range(6):
        _turns(root, engine, 4, start=4 * round_)
        seen |= _every_object(root)
        most = max(most, len(_listed(root)))
    assert most < ownpacks.MERGE_AT + 1
    assert seen <= _every_object(root), "a merge dropped objects"
    assert len(_packs(root)) < 8
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    # Every turn's snapshots read back: undo all 24 turns, then redo them.
    after = (root / "src/t0.txt").read_bytes()
    engine.undo(options=RestoreOptions(count=24))
    assert not (root / "deep").exists()
    engine.redo(options=RestoreOptions(count=24))
    assert (root / "src/t0.txt").read_bytes() == after


# Proves a capture answers before the merge it made due has run: the merge waits on a
# thread of its own, and the next capture waits for it, then finds the packs merged.
def test_a_capture_answers_before_its_merge(
    tmp_path: Path, small_merges: None, monkeypatch: pytest.MonkeyPatch
):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    go_on = threading.Event()
    real = ownpacks.OwnPacks._write_merged

    def held_back(self, ids, repo):
        go_on.wait(timeout=30)
        return real(self, ids, repo)

    monkeypatch.setattr(ownpacks.OwnPacks, "_write_merged", held_back)
    for i in range(3):  # the third pack makes a merge due
        engine.capture(label=f"turn {i}")
        write(root, f"src/t{i}.txt", f"turn {i}\n")
    listed = len(_listed(root))

    assert listed == ownpacks.MERGE_AT and engine.pack_merges._thread.is_alive()
    go_on.set()
    engine.capture(label="next")  # waits for the merge's lock, then captures
    engine.pack_merges.wait()
    assert len(_listed(root)) < listed
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures a pack the user marked with .keep is never deleted, and no longer counted as ours.
def test_a_kept_pack_is_never_deleted(tmp_path: Path, small_merges: None):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 1)
    kept = _listed(root)[0]
    (root / f".git/objects/pack/{kept}.keep").write_text("mine\n")

    _turns(root, engine, 6, start=1)

    assert kept in _packs(root) and kept not in _listed(root)
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures that where a multi-pack-index may name packs, turnback neither writes nor deletes
# packs: a small turn's objects are loose, as before.
def test_a_multi_pack_index_keeps_objects_loose(tmp_path: Path, small_merges: None):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 2)
    git(root, "multi-pack-index", "write")
    before = _packs(root)

    _turns(root, engine, 4, start=2)

    assert _packs(root) == before
    git(root, "multi-pack-index", "verify")
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures the user's `git gc` between turns (which repacks turnback's packs away) leaves
# the list and the next merges working.
def test_git_gc_between_turns(tmp_path: Path, small_merges: None):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 3)
    git(root, "gc", "-q", "--prune=now")
    assert not set(_listed(root)) & _packs(root)

    _turns(root, engine, 5, start=3)

    assert set(_listed(root)) <= _packs(root)
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    engine.undo(options=RestoreOptions(count=8))
    assert not (root / "deep").exists()


# Ensures a pack list that cannot be written costs merges, never a capture: the turn's
# pack is already durable, and the turn undoes.
def test_an_unwritable_list_never_fails_a_capture(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 1)
    (root / ".git/turnback/packs").unlink()
    (root / ".git/turnback/packs").mkdir()

    _turns(root, engine, 2, start=1)

    engine.undo(options=RestoreOptions(count=3))
    assert not (root / "deep").exists()
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Proves a merge stores a file's versions as deltas, as git's repack would (git
# verify-pack reads the chains), so merged packs cost about what git commit adds.
def test_a_merge_stores_versions_as_deltas(tmp_path: Path, small_merges: None):
    root = make_repo(tmp_path / "repo")
    lines = [f"line {i}: {'x' * 60}\n" for i in range(400)]  # ~28 KB, edited a line a turn
    engine = Engine(str(root))
    for turn in range(6):
        engine.capture(label=f"turn {turn}")
        lines[turn * 50] = f"edited in turn {turn}\n"
        write(root, "big.txt", "".join(lines))
        engine.capture(phase="after")
        engine.pack_merges.wait()
    merged = [root / f".git/objects/pack/{name}.idx" for name in _listed(root)]
    report = git(root, "verify-pack", "-v", *map(str, merged))

    assert "chain length = 1" in report  # git read objects stored as deltas
    pack_bytes = sum(idx.with_suffix(".pack").stat().st_size for idx in merged)
    assert pack_bytes < 4 * 28_000  # six versions of big.txt, whole, would be ~6 x 28 KB
    assert git(root, "fsck", "--strict", "--no-dangling") == ""


# Ensures a merged pack that does not hold exactly what was merged is never published and
# no pack is deleted: the capture still succeeds, every object is still there.
def test_a_merged_pack_missing_an_object_deletes_nothing(
    tmp_path: Path, small_merges: None, monkeypatch: pytest.MonkeyPatch
):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    _turns(root, engine, 2)
    before = _every_object(root)
    packs = _packs(root)
    real = ownpacks.write_delta_pack

    def drops_one(repo, objects, folder, threads):  # a packbuilder that lost an object
        real(repo, objects[1:], folder, threads)

    monkeypatch.setattr(ownpacks, "write_delta_pack", drops_one)
    _turns(root, engine, 2, start=2)

    assert packs <= _packs(root) and before <= _every_object(root)
    assert not list((root / ".git/objects/pack").glob("tmp_turnback_merge_*"))
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    engine.undo(options=RestoreOptions(count=4))
    assert not (root / "deep").exists()


# Proves the merge policy: never more than MERGE_AT small packs, settled ones left alone,
# and each object rewritten a few times (about log2), not once per merge.
def test_merge_policy_bounds_packs_and_rewrites():
    packs: list[OwnPack] = [OwnPack("pack-cold", ownpacks.SETTLED + 1)]
    rewritten = 0
    for turn in range(2000):
        packs.append(OwnPack(f"pack-{turn}", 50))
        due = merge_due(packs)
        if due:
            assert ownpacks.SETTLED + 1 not in [p.objects for p in due]
            merged = sum(p.objects for p in due)
            rewritten += merged
            packs = [p for p in packs if p not in due] + [OwnPack(f"pack-m{turn}", merged)]
        assert sum(p.objects < ownpacks.SETTLED for p in packs) < ownpacks.MERGE_AT
    assert rewritten / (2000 * 50) < 8
    assert len(packs) < ownpacks.MERGE_AT + 2000 * 50 // ownpacks.SETTLED


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
