"""Loose objects turnback writes itself are git's, and on stable storage before a ref names
them: each file flushed before it is renamed into place, each folder after."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import GIT_ENV, cli_json, cli_syscalls, git, make_repo, write
from turnback.core import looseobjects
from turnback.core.looseobjects import write_loose
from turnback.errors import StorageFailed

_TYPES = {1: "commit", 2: "tree", 3: "blob"}


def _object(kind: int, data: bytes) -> tuple[bytes, int, bytes]:
    header = f"{_TYPES[kind]} {len(data)}\0".encode()
    return hashlib.sha1(header + data).digest(), kind, data


def _path(objects: Path, raw_id: bytes) -> Path:
    return objects / raw_id.hex()[:2] / raw_id.hex()[2:]


# Proves git reads every object back exactly (empty, binary, a tree, a commit), `fsck
# --strict` passes, each file is read-only as git's, and no staged file is left behind.
def test_git_reads_every_loose_object_written(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    objects = repo / ".git" / "objects"
    blobs = [_object(3, data) for data in (b"", b"line\n" * 30_000, bytes(range(256)) * 9)]
    tree = _object(
        2,
        b"".join(
            b"100644 " + n + b"\0" + o[0] for n, o in zip((b"a", b"b"), blobs[:2], strict=True)
        ),
    )
    author = b"t <t@localhost> 0 +0000"
    commit = _object(
        1, b"tree %s\nauthor %s\ncommitter %s\n\nturn\n" % (tree[0].hex().encode(), author, author)
    )
    written = [*blobs, tree, commit]

    write_loose(objects, iter(written))

    for oid, kind, data in written:
        shown = subprocess.run(
            ["git", "cat-file", _TYPES[kind], oid.hex()], cwd=repo, env=GIT_ENV, capture_output=True
        )
        assert shown.returncode == 0 and shown.stdout == data
        assert _path(objects, oid).stat().st_mode & 0o222 == 0
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""
    assert not list(objects.glob("*/tmp_obj_*"))


# Proves an object already there is left as it is (not rewritten, not replaced).
def test_an_object_already_there_is_left_alone(tmp_path: Path):
    objects = make_repo(tmp_path / "repo") / ".git" / "objects"
    blob = _object(3, b"kept\n")
    write_loose(objects, [blob])
    before = os.stat(_path(objects, blob[0]))
    write_loose(objects, [blob])
    after = os.stat(_path(objects, blob[0]))
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# Proves a failed write (a folder it may not create in) is StorageFailed and leaves no
# staged file behind, nor any object half there.
def test_a_failed_write_leaves_nothing_staged(tmp_path: Path):
    objects = make_repo(tmp_path / "repo") / ".git" / "objects"
    first, second = _object(3, b"one\n"), _object(3, b"two\n")
    blocked = objects / second[0].hex()[:2]
    if blocked.exists() or first[0][:1] == second[0][:1]:
        pytest.skip("the two objects share a folder")  # (they do not: fixed contents)
    blocked.write_text("a file where the folder goes")
    with pytest.raises(StorageFailed):
        write_loose(objects, [first, second])
    assert not _path(objects, first[0]).exists()
    assert not list(objects.glob("*/tmp_obj_*"))


# Proves a capture's new objects are each flushed (their file, then their folder) before
# the ref that names them is written: with the flushes issued side by side, none may be
# left out or come after the ref.
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_capture_flushes_each_new_object_before_its_ref(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {f"d{n}/f.txt": "v0\n" for n in range(12)})
    for n in range(12):
        write(repo, f"d{n}/f.txt", f"agent {n}\n")
    before = {p.name for p in (repo / ".git" / "objects").glob("??/*")}
    trace = cli_syscalls(repo, "fsync,rename,link", "capture", "--json")
    created = {p for p in (repo / ".git" / "objects").glob("??/*") if p.name not in before}
    assert len(created) >= 12 + 12 + 2  # the blobs, their folders' trees, the root, anchors
    lines = trace.splitlines()
    ref_written = re.compile(r'(rename|link)\("[^"]*/refs/turnback/[^"]*\.lock", .*\) = 0')
    refs = [i for i, line in enumerate(lines) if ref_written.search(line)]
    flushes = [
        (i, found.group(1))
        for i, line in enumerate(lines)
        if (found := re.search(r"fsync\(\d+<([^>]*)>", line))  # issued (pool.map waits)
    ]
    for obj in created:
        placed = [
            (i, found.group(1))
            for i, line in enumerate(lines)
            if (found := re.search(rf'(?:rename|link)\("([^"]+)", "{obj}"\) = 0', line))
        ]
        assert placed, f"{obj} was not put in place by a rename or link"
        renamed, temporary = placed[0]
        named = min(i for i in refs if i > renamed)  # the ref written next names it
        assert any(i < renamed and path == temporary for i, path in flushes), obj
        assert any(renamed < i < named and path == str(obj.parent) for i, path in flushes), obj


class _Interrupted(BaseException):
    """What a Ctrl-C is to the CLI: raised in the main thread while it waits."""


# Ensures an interrupt while the objects are being written (a slow disk: each flush takes
# 0.2 s) leaves no staged file behind: the objects not yet begun were still created and
# flushed by the pool after write_loose had cleaned up, 34 of 40 in a review's run.
@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_an_interrupt_while_writing_leaves_no_staged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    objects = make_repo(tmp_path / "repo") / ".git" / "objects"
    real_flush = looseobjects.flush_fd

    def slow_flush(fd: int) -> None:
        time.sleep(0.2)
        real_flush(fd)

    def interrupt(_signum: int, _frame: object) -> None:
        raise _Interrupted

    monkeypatch.setattr(looseobjects, "flush_fd", slow_flush)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Interrupted):
            write_loose(objects, [_object(3, f"blob {n}\n".encode()) for n in range(40)])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    time.sleep(2.0)  # what the pool would still have written
    assert not list(objects.glob("*/tmp_obj_*"))


# Ensures objects in a repository shared with a group (`core.sharedRepository=group`) can
# be read by the group under a umask that would keep them private, as git makes them.
def test_objects_of_a_shared_repository_are_readable_by_its_group(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "config", "core.sharedRepository", "group")
    write(repo, "a.txt", "the agent's\n")
    previous = os.umask(0o077)
    try:
        cli_json(repo, "capture", "--label", "turn")
    finally:
        os.umask(previous)
    blob = git(repo, "hash-object", "a.txt").strip()
    mode = (repo / ".git" / "objects" / blob[:2] / blob[2:]).stat().st_mode & 0o777
    assert mode == 0o440  # git's own: read-only, and readable by the group
    # So is every other object the capture wrote, libgit2's own writes included (the turn's
    # snapshot commit was 0400, and the group's `git fsck` failed on it).
    private = [p for p in (repo / ".git" / "objects").glob("??/*") if p.stat().st_mode & 0o040 == 0]
    assert private == []
