"""A capture's new objects, gathered in memory and written at once before a ref names them.

A cold first capture at 100k files writes ~1,100 new objects (the untracked files'
blobs and the trees above them), a turn on a real tree ~50. Written loose, each is a
file created, compressed and fsynced with its directory (`ENABLE_FSYNC_GITDIR`): ~200 of
a ~580 ms cold capture, 50-100 ms of a turn's, where git's own temporary-index method
fsyncs nothing. Objects written through `ObjectBatch.repo` stay in memory (libgit2's
mempack backend on a handle of their own) and `commit` writes them into the repository
as one pack (`packfile`: three flushes) before anything names them. A few objects, which
git would keep loose, are written loose at once; listing them as a pack to unpack once the
capture has answered (`ownpacks`) is switched off, as it is not safe beside git's own gc.
Reads through the handle see the repository's objects and the batch's.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from .objectwrites import written
from .ownpacks import OwnPacks
from .packfile import write_pack
from .pygit2_internals import MemoryObjects, set_workdir
from .rawhash import STREAM_ABOVE
from .treeops import DIR_MODE, raw_tree_entries

#: Up to this many new objects end loose (unpacked after the capture, or written loose);
#: more stay one pack, as git's own large writes do.
LOOSE_UP_TO = 64
#: Blob bytes held in memory before `over_limit` asks for a commit (server memory).
HELD_BYTES = 8 << 20


class ObjectBatch:
    """Writes through `repo` are held until `commit`, which writes them into `target`
    (the workspace's own handle on the same repository). One capture at a time."""

    def __init__(
        self,
        target: pygit2.Repository,
        objects_dir: Path,
        hold: bool = True,
        packs: OwnPacks | None = None,
    ) -> None:
        self.target = target
        self.objects_dir = objects_dir
        self.packs = packs
        self._memory: MemoryObjects | None = None
        #: Where objects are written: in memory, or straight to disk (`hold` False, or
        #: mempack missing), as loose objects.
        self.repo = target
        if hold:
            handle = pygit2.Repository(target.path)
            if target.workdir:
                set_workdir(handle, target.workdir)
            self._memory = MemoryObjects.attach(handle)
            if self._memory is not None:
                self.repo = handle
        self._blobs: dict[pygit2.Oid, None] = {}
        self._held = 0

    @property
    def holding(self) -> bool:
        """Whether objects written through `repo` stay in memory until `commit`."""
        return self._memory is not None

    def blob_repo(self, size: int) -> pygit2.Repository:
        """Where a file of `size` bytes is hashed: a large one streams straight to disk."""
        return self.target if size > STREAM_ABOVE else self.repo

    def held_blob(self, oid: pygit2.Oid, size: int) -> None:
        """Notes a blob written through `repo` (it may have existed already)."""
        if self.repo is not self.target and size <= STREAM_ABOVE:
            self._blobs[oid] = None
            self._held += size

    def over_limit(self) -> bool:
        return self._held > HELD_BYTES

    def commit(self, tree: pygit2.Oid | None = None, commit: pygit2.Oid | None = None) -> None:
        """Writes the held blobs, the new trees under `tree` and `commit` (of that tree)
        into the repository, durably (libgit2's fsync for loose objects, `write_pack`'s
        for a pack)."""
        if self._memory is None:
            return
        try:
            exists = self.target.odb.exists
            blobs = [oid for oid in self._blobs if not exists(oid)]  # a file put back
            oids = blobs + (self._new_trees(tree) if tree is not None else [])
            if commit is not None and not exists(commit):
                oids.append(commit)
            if not oids:
                return
            to_unpack = len(oids) <= LOOSE_UP_TO and self.packs is not None and self.packs.usable()
            if len(oids) <= LOOSE_UP_TO and not to_unpack:
                for oid in oids:
                    kind, data = self.read(oid)
                    written(lambda: self.target.odb.write(kind, data))  # noqa: B023
                return
            objects = ((oid.raw, *self.read(oid)) for oid in oids)
            pack = write_pack(self.objects_dir / "pack", len(oids), objects)
            if to_unpack:
                self.packs.added(pack)  # written loose once the capture has answered
        finally:
            self.discard()

    def discard(self) -> None:
        """Forgets what is held: nothing names it (a capture that failed, or committed)."""
        if self._memory is not None:
            self._memory.reset()
        self._blobs.clear()
        self._held = 0

    def close(self) -> None:
        """Forgets what is held and lets go of the batch's own handle now: pygit2's
        Repository is freed only by the cycle collector, and until then it would hold the
        packs it opened (deleted ones too, once unpacked or after the user's gc)."""
        self.discard()
        if self._memory is not None:
            self._memory = None
            self.repo.free()
            self.repo = self.target

    def _new_trees(self, root: pygit2.Oid) -> list[pygit2.Oid]:
        """Trees under `root` (itself included) the repository does not have yet."""
        exists = self.target.odb.exists
        if exists(root):
            return []
        found, stack = [], [root]
        while stack:
            oid = stack.pop()
            found.append(oid)
            _kind, data = self.read(oid)
            for mode, _name, raw_id in raw_tree_entries(data):
                if mode == DIR_MODE:
                    child = pygit2.Oid(raw=raw_id)
                    if not exists(child):
                        stack.append(child)
        return found

    def read(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        """An object's type number and content, held or on disk (libgit2's memory backend
        answers a full-id lookup, not `Odb.read` nor the packer)."""
        assert self._memory is not None
        try:
            return self._memory.read(oid)
        except KeyError:
            # A tree the index's cache named but the repository lost: the scanner's
            # "not found" path starts over from the user's index.
            raise pygit2.GitError(f"object not found: {oid}") from None
