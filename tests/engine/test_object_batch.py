"""A capture's new objects reach the repository in one pack (a few are unpacked after it
answers: test_own_packs.py), durably before any ref names them, and every snapshot reads
back exactly."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from helpers import (
    cli_json,
    cli_syscalls,
    git,
    listed_packs,
    loose_objects,
    make_repo,
    pack_names,
    tree_state,
    write,
)
from turnback.core import objectbatch, pygit2_internals
from turnback.engine import Engine


def _many_new_files(root: Path, count: int) -> None:
    """New files in nine untracked directories, each under the untracked-directory limit."""
    for i in range(count):
        write(root, f"gen{i % 9}/e{i % 4}/file_{i}.txt", f"new file {i}\n" * (i % 5 + 1))


def _turn_of_new_files(tmp_path: Path, count: int) -> tuple[Path, Engine, set[str]]:
    """A sealed turn that added `count` files; the packs there were before it."""
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    packs = pack_names(root)
    _many_new_files(root, count)
    engine.capture(phase="after")
    return root, engine, packs


def _undo_redo_round_trip(engine: Engine, root: Path) -> None:
    after = tree_state(root)
    engine.undo()
    assert "gen0/e0/file_0.txt" not in tree_state(root)
    engine.redo()
    assert tree_state(root) == after


# Ensures a turn's few objects are loose when the capture answers and no pack is listed to
# be unpacked: deleting such a pack beside git's own prune-packed can lose an object.
def test_a_small_turn_writes_loose_objects_and_lists_no_pack(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    packs, loose = pack_names(root), loose_objects(root)
    write(root, "src/app.py", "print('the agent was here')\n")
    engine.capture(phase="after")
    assert pack_names(root) == packs and listed_packs(root) == []
    assert git(root, "hash-object", "src/app.py").strip() in loose_objects(root) - loose
    engine.close()


# Proves a capture of 200 new files writes one pack (and no loose object for them), that
# git fsck finds the repository whole, and that undo/redo restore every byte from it.
def test_many_new_objects_go_into_one_pack(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    engine = Engine(str(root))
    engine.capture(label="turn")
    packs, loose = pack_names(root), loose_objects(root)
    _many_new_files(root, 200)

    engine.capture(phase="after")

    assert len(pack_names(root) - packs) == 1
    assert len(loose_objects(root) - loose) < 20  # commits and timeline records, not 200 blobs
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    _undo_redo_round_trip(engine, root)


# Proves a watching engine's capture of 200 edited files also writes one pack: written
# loose, each blob was its own flushed file (1,000 files of linux's tree: 766 -> 263 ms).
def test_a_large_watched_turn_goes_into_one_pack(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {f"src/f{i}.txt": f"file {i}\n" for i in range(200)})
    engine = Engine(str(root))
    if not engine.enable_watcher():
        pytest.skip("no inotify here")
    engine.capture(label="warm")  # the full scan a watch begins with
    engine.capture(label="turn")
    packs, loose = pack_names(root), loose_objects(root)
    for i in range(200):
        write(root, f"src/f{i}.txt", f"file {i}, edited by the agent\n")
    engine.capture(phase="after")
    assert engine.watcher is not None and len(pack_names(root) - packs) == 1
    assert len(loose_objects(root) - loose) < 20  # commits and timeline records, not 200 blobs
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    engine.undo()
    assert (root / "src" / "f7.txt").read_text() == "file 7\n"
    engine.redo()
    assert (root / "src" / "f7.txt").read_text() == "file 7, edited by the agent\n"
    engine.close()


# Proves blobs past the memory bound are written out mid-capture (several packs), complete.
def test_held_bytes_bound_commits_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(objectbatch, "HELD_BYTES", 3000)  # ~100 blobs a batch
    root, engine, packs = _turn_of_new_files(tmp_path, 300)

    assert len(pack_names(root) - packs) >= 2
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    _undo_redo_round_trip(engine, root)


# Proves that where libgit2's mempack cannot be found (a Windows DLL), objects are written
# straight to the repository as before.
def test_without_mempack_objects_are_written_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(pygit2_internals.MemoryObjects, "attach", classmethod(lambda cls, r: None))
    root, engine, packs = _turn_of_new_files(tmp_path, 120)

    assert pack_names(root) == packs
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    _undo_redo_round_trip(engine, root)


# Proves the pack and its index are fsynced before either is renamed into place, the pack
# directory after, and all of it before the ref that names the snapshot is written.
@pytest.mark.skipif(
    shutil.which("strace") is None or sys.platform != "linux", reason="needs strace"
)
def test_pack_is_durable_before_a_ref_names_it(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    cli_json(root, "capture", "--label", "warm")
    _many_new_files(root, 150)
    trace = cli_syscalls(
        root, "fsync,rename,renameat,renameat2", "capture", "--label", "turn", timeout=120
    )
    calls = [re.sub(r"^\[pid\s+\d+\]\s*", "", line) for line in trace.splitlines()]

    def where(call: str, mark: str) -> list[int]:
        return [i for i, c in enumerate(calls) if c.startswith(call) and mark in c]

    staged_fsyncs = where("fsync", "/tmp_turnback_")
    renames = where("rename", "/tmp_turnback_")
    dir_fsyncs = where("fsync", "/objects/pack>")
    ref_writes = where("rename", "/refs/turnback/")
    assert len(staged_fsyncs) == 2 and len(renames) == 2 and dir_fsyncs and ref_writes, calls
    assert max(staged_fsyncs) < min(renames) < max(renames) < min(dir_fsyncs) < min(ref_writes)
    assert ".idx" in calls[max(renames)]  # the index is published last
