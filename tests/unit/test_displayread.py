"""A diff's reads give each object's stored bytes, wherever the object is kept."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo
from turnback.core.displayread import read_for_display
from turnback.core.packfile import write_pack


def _packed_blob(objects_dir: Path, data: bytes) -> pygit2.Oid:
    raw = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
    write_pack(objects_dir / "pack", 1, iter([(raw, 3, data)]))
    return pygit2.Oid(raw=raw)


# Proves loose and packed blobs, and one in a pack written after the handle listed its
# packs (the checked read's refresh finds it), read back byte for byte.
def test_reads_loose_packed_and_newly_packed_blobs(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    repo = pygit2.Repository(str(root))
    loose = repo.create_blob(b"loose\r\nbytes\0\xff")
    packed = _packed_blob(root / ".git" / "objects", b"packed\n" * 1000)
    assert read_for_display(repo, loose) == b"loose\r\nbytes\0\xff"
    assert read_for_display(repo, packed) == b"packed\n" * 1000

    later = _packed_blob(root / ".git" / "objects", b"written by another process\n")
    assert read_for_display(repo, later) == b"written by another process\n"


# Proves an object that is nowhere raises KeyError, as the checked read does.
def test_a_missing_object_raises_key_error(tmp_path: Path):
    repo = pygit2.Repository(str(make_repo(tmp_path / "repo")))
    with pytest.raises(KeyError):
        read_for_display(repo, pygit2.Oid(hex="1" * 40))


# Proves the display read skips libgit2's hash check (its cost) while the checked read,
# which undo and redo use, still refuses a loose object whose bytes do not match its id.
def test_display_skips_the_hash_check_that_checked_reads_keep(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    repo = pygit2.Repository(str(root))
    oid = repo.create_blob(b"original\n")
    stored = root / ".git" / "objects" / str(oid)[:2] / str(oid)[2:]
    stored.chmod(0o644)
    stored.write_bytes(zlib.compress(b"blob 9\0tampered\n"))
    repo = pygit2.Repository(str(root))

    assert read_for_display(repo, oid) == b"tampered\n"
    with pytest.raises(pygit2.GitError):
        repo.odb.read(oid)
