"""Packs turnback writes itself are packs git reads: every object, byte for byte."""

from __future__ import annotations

import hashlib
import struct
import subprocess
from pathlib import Path

from helpers import GIT_ENV, git, make_repo
from turnback.core.packfile import _index, write_pack

_TYPES = {1: "commit", 2: "tree", 3: "blob"}


def _object(kind: int, data: bytes) -> tuple[bytes, int, bytes]:
    header = f"{_TYPES[kind]} {len(data)}\0".encode()
    return hashlib.sha1(header + data).digest(), kind, data


# Proves git verifies a written pack and reads each object back exactly: empty, tiny, a size
# that needs several header bytes, binary bytes, and a tree naming two of them.
def test_git_reads_every_object_of_a_written_pack(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    blobs = [b"", b"x", b"line\n" * 40_000, bytes(range(256)) * 9]
    objects = [_object(3, data) for data in blobs]
    tree = b"".join(
        b"100644 " + name + b"\0" + oid
        for name, (oid, _kind, _data) in sorted(zip([b"a", b"b"], objects[1:3], strict=True))
    )
    objects.append(_object(2, tree))

    pack = write_pack(repo / ".git" / "objects" / "pack", len(objects), iter(objects))

    verified = git(repo, "verify-pack", "-v", str(pack.with_suffix(".idx")))
    assert f"non delta: {len(objects)} objects" in verified
    for oid, kind, data in objects:
        shown = subprocess.run(
            ["git", "cat-file", _TYPES[kind], oid.hex()], cwd=repo, env=GIT_ENV, capture_output=True
        )
        assert shown.returncode == 0 and shown.stdout == data
    assert git(repo, "ls-tree", objects[-1][0].hex()).count("blob") == 2
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""
    assert not list(pack.parent.glob("tmp_*"))  # nothing staged is left behind


# Proves an offset past 2 GiB goes to the index's 64-bit table, flagged in the 32-bit one.
def test_index_stores_large_offsets_in_their_own_table():
    small, large = b"\x01" * 20, b"\x02" * 20
    index = _index([(large, 7, 5 << 30), (small, 9, 12)], b"\0" * 20)
    count = 2
    base = 8 + 256 * 4 + 20 * count + 4 * count
    offsets = struct.unpack_from(">2I", index, base)
    assert offsets == (12, 0x80000000)
    assert struct.unpack_from(">Q", index, base + 8) == (5 << 30,)
