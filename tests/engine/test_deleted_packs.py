"""A long-lived engine lets go of the packs git deletes (core/packfolder.py), real git gc."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from helpers import git, make_repo, write
from turnback.engine import Engine


def held_deleted_files(root: Path) -> list[str]:
    """Files under `root` deleted from disk that this process still holds open or mapped."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)) and target.endswith(" (deleted)"):
            held.append(target)
    for line in Path("/proc/self/maps").read_text().splitlines():
        if str(root) in line and line.endswith(" (deleted)"):
            held.append(line.split()[-2])
    return held


def packed_repo_with_open_turn(tmp_path: Path) -> tuple[Path, Engine]:
    """A repository whose objects are all in one pack, and an engine with a turn open."""
    root = make_repo(tmp_path / "repo", {f"src/f{i}.txt": f"file {i}\n" * 50 for i in range(20)})
    git(root, "repack", "-adq")
    engine = Engine(str(root))
    engine.capture(session="s")
    return root, engine


# Ensures that after the user's `git gc` the next operation frees the old pack: before,
# the server kept it (its disk space, its mappings) for as long as it ran.
def test_packs_git_deleted_are_let_go(tmp_path: Path) -> None:
    root, engine = packed_repo_with_open_turn(tmp_path)
    write(root, "src/f1.txt", "changed\n")
    engine.capture(session="s", phase="after")
    assert engine.diff("s", None).files  # reads the old blob from the pack
    git(root, "commit", "-qam", "two")
    git(root, "gc", "-q", "--prune=now")
    assert held_deleted_files(root), "libgit2 no longer holds deleted packs: test is moot"

    engine.capture(session="s")
    engine.unpacking.wait()  # its handle, freed when done, may map a pack gc deleted

    assert held_deleted_files(root) == []
    write(root, "src/f2.txt", "changed too\n")
    engine.capture(session="s", phase="after")
    diff = engine.diff("s", None)  # the old side is read from the new pack
    assert [f.path for f in diff.files] == ["src/f2.txt"]
    engine.close()


# Ensures a capture's own object batch (a large turn's, core/objectbatch.py) lets go of its
# handle when the capture ends: pygit2 frees a Repository only in the cycle collector, so
# it held the packs the user's gc deleted open until some later collection.
def test_a_large_turns_batch_lets_go_of_its_packs(tmp_path: Path) -> None:
    root, engine = packed_repo_with_open_turn(tmp_path)
    for i in range(100):  # more new objects than are written loose: a batch of its own
        write(root, f"new/n{i}.txt", f"new file {i}\n")
    gc.disable()  # as if no collection ran between the capture and the user's gc
    try:
        engine.capture(session="s", phase="after")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "two")
        git(root, "gc", "-q", "--prune=now")
        engine.capture(session="s")
        engine.unpacking.wait()

        assert held_deleted_files(root) == []
    finally:
        gc.enable()
        engine.close()
