"""A capture's new objects, gathered in memory and written at once before a ref names them.

A cold first capture at 100k files writes ~1,100 new objects (the untracked files'
blobs and the trees above them), a turn on a real tree ~45, a timeline save ~10. Written
by libgit2, each is a file created, compressed and fsynced with its directory, one after
the other (`ENABLE_FSYNC_GITDIR`). Objects written through `ObjectBatch.repo` stay in
memory instead (libgit2's mempack backend on a handle of their own), and `commit` writes
them into the repository before anything names them: up to `LOOSE_UP_TO` loose, as git
keeps a few, with their flushes side by side (`looseobjects`); more as one pack
(`packfile`: three flushes). Listing the few as a pack to unpack once the capture has
answered (`ownpacks`) is switched off, as it is not safe beside git's own gc. Reads
through the handle see the repository's objects and the batch's."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from .looseobjects import write_loose
from .objectwrites import written
from .ownpacks import OwnPacks
from .packfile import write_pack
from .pygit2_internals import MemoryObjects, set_workdir
from .rawhash import STREAM_ABOVE
from .treeops import DIR_MODE, raw_tree_entries

#: Up to this many new objects end loose (unpacked after the capture, or written loose);
#: more stay one pack, as git's own large writes do.
LOOSE_UP_TO = 64
#: git's type numbers, and the modes of a tree's blob entries (a gitlink names a commit
#: of another repository).
_COMMIT, _TREE = 1, 2
_BLOB_MODES = (b"100644", b"100755", b"120000")
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

    def commit(self, *roots: pygit2.Oid | None, blobs_in_trees: bool = False) -> None:
        """Writes the held blobs and every object under `roots` (commits, trees) that the
        repository lacks into it, durably: loose, flushed together (`looseobjects`), or
        as one pack (`packfile`). A new tree's blobs are looked for with `blobs_in_trees`
        (small trees whose blobs nobody noted with `held_blob`)."""
        if self._memory is None:
            return
        try:
            exists = self.target.odb.exists
            blobs = [oid for oid in self._blobs if not exists(oid)]  # a file put back
            found = self._new_objects([r for r in roots if r is not None], blobs_in_trees)
            oids = list(dict.fromkeys(blobs + found))
            if not oids:
                return
            to_unpack = len(oids) <= LOOSE_UP_TO and self.packs is not None and self.packs.usable()
            objects = ((oid.raw, *self.read(oid)) for oid in oids)
            if len(oids) <= LOOSE_UP_TO and not to_unpack:
                if os.name == "nt":  # a read-only file cannot be flushed there
                    for _raw, kind, data in objects:
                        written(lambda: self.target.odb.write(kind, data))  # noqa: B023
                else:
                    write_loose(self.objects_dir, objects)
                return
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

    def _new_objects(self, roots: list[pygit2.Oid], blobs: bool) -> list[pygit2.Oid]:
        """The objects under `roots` (themselves included) the repository does not have
        yet: a commit's tree and parents, a tree's subtrees (and blobs, with `blobs`)."""
        exists = self.target.odb.exists
        found: list[pygit2.Oid] = []
        seen: set[pygit2.Oid] = set()
        stack = [root for root in roots if not exists(root)]
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            found.append(oid)
            kind, data = self.read(oid)
            if kind == _TREE:
                links = [
                    pygit2.Oid(raw=raw_id)
                    for mode, _name, raw_id in raw_tree_entries(data)
                    if mode == DIR_MODE or (blobs and mode in _BLOB_MODES)
                ]
            elif kind == _COMMIT:
                links = _commit_links(data)
            else:
                links = []
            stack.extend(link for link in links if link not in seen and not exists(link))
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


def _commit_links(data: bytes) -> list[pygit2.Oid]:
    """A commit's tree and parents, from its header lines."""
    links = []
    for line in data.split(b"\n"):
        if not line:
            break  # the header's end: the message follows
        key, _, value = line.partition(b" ")
        if key in (b"tree", b"parent"):
            links.append(pygit2.Oid(hex=value.decode("ascii")))
    return links
