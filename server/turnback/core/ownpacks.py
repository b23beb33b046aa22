"""turnback's own packs: one per capture, unpacked into loose objects once it has answered.

A capture writes its few new objects (the changed files' blobs, the trees above them, the
anchor commit: ~50 on a real tree) as one pack, three flushes (`packfile.write_pack`),
where loose objects cost a file and its folder flushed each: 36-48 ms of a full-scan
capture on linux's tree. Packs would stay packs, though: git's incremental repack
(`repack -d`) deltifies only loose objects, so turnback's blobs and trees would stay
whole until the user's next full gc (1.49x what `git commit` adds, bench/README.md run
r), and past `gc.autoPackLimit` git would repack everything during the user's commit.
So once the capture has answered, a thread (snapshot/unpacking.py) writes each listed
pack's objects loose, as the capture used to, and deletes the pack: the repository ends
as it did before, and no agent waits for the flushes. It writes an object only while no
capture or restore runs, so that theirs never queue behind its flushes.

Safe at every point: a pack is on stable storage before anything names its objects; its
objects are written loose through a loose-only object database (libgit2 computes each id
from what it wrote, and flushes the file and its folder), each is checked on disk, and
only then is the pack deleted, index first. Readers find every object in the pack or
loose, as while the user's own gc runs; no repository lock is needed. A crash leaves a
pack listed, unpacked by the next process; a lost list leaves packs for git's gc. A pack
with a `.keep` is never deleted; where a multi-pack-index exists, and on Windows (a pack
a handle has open cannot be deleted), captures write loose objects as before.

Switched off (`UNPACK_AFTER_CAPTURE`): deleting a pack whose objects are loose is not safe
beside git's own `prune-packed` (run by every `git gc --auto` and `git repack -d`), which
deletes loose objects that a pack it opened at its start also holds. Interleaved, the two
lose an object: the loose copy goes because the pack holds it, the pack goes because the
loose copy exists. tests/reliability/test_concurrency.py caught it once (a user's commit
ran `gc --auto` beside two servers: a snapshot's tree was gone). Until the deletion can be
made safe against a concurrent gc, captures write their few objects loose, as git does.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable
from pathlib import Path

import pygit2

from ..errors import Busy
from . import faults
from .locking import repository_lock

log = logging.getLogger(__name__)

#: Whether captures write their few objects as a pack unpacked once they have answered
#: (off: see the module's docstring; the tests of the mechanism switch it on).
UNPACK_AFTER_CAPTURE = False
#: libgit2's zlib level for loose objects (what the capture's own loose writes used).
_LOOSE_COMPRESSION = 1
#: How long unpacking waits for a capture that is recording its pack in the list.
_LIST_LOCK_TIMEOUT = 10.0
_IDX_HEADER = b"\xfftOc" + struct.pack(">I", 2)
_FANOUT_END = 8 + 256 * 4


class OwnPacks:
    """The packs captures wrote into one objects folder and that still wait to be unpacked."""

    def __init__(self, objects_dir: Path, list_path: Path) -> None:
        self.objects_dir = objects_dir
        self.pack_dir = objects_dir / "pack"
        self.list_path = list_path
        self._list_lock = list_path.with_name(list_path.name + ".lock")
        #: Whether a pack was added since the last `unpack`.
        self.due = False

    def usable(self) -> bool:
        """Whether a capture may write a pack to unpack here: not where a multi-pack-index
        may name it, nor on Windows, where a pack a handle has open cannot be deleted."""
        if not UNPACK_AFTER_CAPTURE:
            return False
        return os.name != "nt" and not (self.pack_dir / "multi-pack-index").exists()

    def added(self, pack: Path) -> None:
        """Lists a pack just written (already on stable storage). A list that cannot be
        written is logged, never the capture's failure: the pack stays a pack."""
        try:
            with repository_lock(self._list_lock, _LIST_LOCK_TIMEOUT):
                self._save([*self._load(), pack.stem])
            self.due = True
        except (OSError, Busy) as error:
            log.warning("turnback: could not list its pack in %s: %s", self.pack_dir, error)

    def unpack(self, repo: pygit2.Repository, pause: Callable[[], None]) -> None:
        """Writes every listed pack's objects loose, then deletes the pack. `repo` is a
        handle of the caller's own (its thread's), not the one captures use; `pause`
        returns once no capture or restore is running, and is called before each object,
        so that their flushes never queue behind this thread's."""
        self.due = False
        loose = pygit2.Odb()
        flushed = True  # each file and its folder, as the capture's own loose writes are
        loose.add_backend(
            pygit2.OdbBackendLoose(str(self.objects_dir), _LOOSE_COMPRESSION, flushed), 1
        )
        try:
            with repository_lock(self._list_lock, _LIST_LOCK_TIMEOUT):
                names = self._load()
                self._save(names)  # without the packs git's gc took meanwhile
            for name in names:
                self._unpack(name, repo, loose, pause)
                with repository_lock(self._list_lock, _LIST_LOCK_TIMEOUT):
                    self._save([other for other in self._load() if other != name])
        except (OSError, ValueError, Busy, pygit2.GitError) as error:
            # The pack stays, listed: the next capture's unpacking tries again.
            log.warning("turnback: could not unpack its packs in %s: %s", self.pack_dir, error)

    def _unpack(
        self, name: str, repo: pygit2.Repository, loose: pygit2.Odb, pause: Callable[[], None]
    ) -> None:
        index = self.pack_dir / f"{name}.idx"
        ids = pack_ids(index)
        for raw in ids:
            pause()
            if not index.exists():
                # Repacked by git, or the repository deleted (a nested one, say): nothing
                # to unpack, and no folder of a deleted repository is made again.
                return
            oid = pygit2.Oid(raw=raw)
            if not loose.exists(oid) and loose.write(*repo.odb.read(oid)) != oid:
                raise ValueError(f"{oid} read back from {name} as other bytes")
        faults.step("pack unpacked")
        missing = [raw.hex() for raw in ids if not self._loose_path(raw).is_file()]
        if missing:
            raise ValueError(f"{len(missing)} objects of {name} are not loose, e.g. {missing[0]}")
        if (self.pack_dir / f"{name}.keep").exists():
            return  # the user keeps it: its objects are loose as well now, which is harmless
        for suffix in (".idx", ".rev", ".pack"):  # the index first: it publishes a pack
            (self.pack_dir / f"{name}{suffix}").unlink(missing_ok=True)
        faults.step("pack deleted")

    def _loose_path(self, raw: bytes) -> Path:
        hexid = raw.hex()
        return self.objects_dir / hexid[:2] / hexid[2:]

    def _load(self) -> list[str]:
        """The listed packs that are still there (git's gc may have repacked them)."""
        try:
            lines = self.list_path.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        return [
            name
            for name in dict.fromkeys(line.split(" ", 1)[0] for line in lines)
            if name.startswith("pack-") and (self.pack_dir / f"{name}.idx").exists()
        ]

    def _save(self, names: list[str]) -> None:
        """Replaces the list at once; not flushed: a list lost in a crash leaves packs."""
        temporary = self.list_path.with_name(self.list_path.name + ".tmp")
        temporary.write_text("".join(f"{name}\n" for name in names))
        os.replace(temporary, self.list_path)


def pack_ids(idx: Path) -> list[bytes]:
    """The object ids a version-2 pack index lists."""
    with open(idx, "rb") as stream:
        head = stream.read(_FANOUT_END)
        if len(head) != _FANOUT_END or head[:8] != _IDX_HEADER:
            raise ValueError(f"not a version 2 pack index: {idx}")
        (count,) = struct.unpack(">I", head[-4:])
        data = stream.read(count * 20)
    if len(data) != count * 20:
        raise ValueError(f"truncated pack index: {idx}")
    return [data[i : i + 20] for i in range(0, len(data), 20)]
