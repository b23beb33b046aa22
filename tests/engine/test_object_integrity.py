"""Undo and redo write only objects whose bytes match their ids; a diff, which writes
nothing, shows what is stored without hashing it again (core/displayread.py)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo, tree_state, write
from turnback.engine import Engine, RestoreOptions
from turnback.errors import RestoreFailed


def _tamper(root: Path, content: bytes, stored: bytes) -> None:
    """Rewrites the loose object of `content` to hold `stored` (of the same length)
    under its old id: zlib's checksum is right, the hash is not."""
    oid = pygit2.Repository(str(root)).create_blob(content)
    path = root / ".git" / "objects" / str(oid)[:2] / str(oid)[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(stored) + stored))


@pytest.fixture
def sealed_turn(tmp_path: Path) -> tuple[Path, Engine]:
    root = make_repo(tmp_path / "repo", {"a.txt": "original a\n", "b.txt": "original b\n"})
    engine = Engine(str(root))
    engine.capture(session="s")
    write(root, "a.txt", "agent's a\n")
    write(root, "b.txt", "agent's b\n")
    engine.capture(session="s", phase="after")
    return root, engine


# Proves undo refuses a snapshot blob whose bytes do not match its id, says so, and
# changes no file (the libgit2 hash check stays on the path that writes).
def test_undo_refuses_a_tampered_object_and_changes_nothing(sealed_turn):
    root, engine = sealed_turn
    _tamper(root, b"original a\n", b"tampered a\n")
    before = tree_state(root)

    with pytest.raises(RestoreFailed, match="hash mismatch.*Nothing was changed"):
        engine.undo("s", RestoreOptions())
    assert tree_state(root) == before


# Proves the diff of the same turn answers, showing the stored bytes.
def test_diff_shows_the_stored_bytes_of_a_tampered_object(sealed_turn):
    root, engine = sealed_turn
    _tamper(root, b"original a\n", b"tampered a\n")

    files = {f.path: f for f in engine.diff("s", None).files}
    assert "-tampered a\n+agent's a\n" in files["a.txt"].diff
    assert "-original b\n+agent's b\n" in files["b.txt"].diff
