"""A member repository's new objects, kept in memory until the workspace has copied them.

A workspace's snapshot lives in the workspace's own object database (members.py): each
member's new blobs and trees are copied there, flushed, before the turn names them. The
member's own copies only serve its stat cache (the private index and the anchor that
keeps what it names from git's gc), so flushing them too before the capture answers
doubled its writes: a turn across three members took 1.83x the time of the same turn in
one repository, about 55 flushed writes against 25 (bench/README.md, nineteenth session).

So a member's watcher capture holds its objects in an `ObjectBatch` (writing through a
handle no other thread uses: `ScanHandles.idle_handle`), the workspace copies them from
there, and the cache writer's thread then writes them into the member's repository and
moves its anchor, after the capture has answered. The member's next use settles that
write first. Nothing on disk names the objects before they are written: the member's
index file is saved only after a settle, and the anchor moves after the objects. If the
write fails, the member's next capture starts again from its saved cache.
"""

from __future__ import annotations

import pygit2

from ..core.grafting import Reader
from ..core.objectbatch import ObjectBatch
from .cachewrite import CacheWriter
from .privateindex import PrivateIndex


class HeldObjects:
    """At most one capture's objects, held until `write` (one member scanner's)."""

    def __init__(self, private: PrivateIndex, cache_writer: CacheWriter) -> None:
        self._private = private
        self._cache_writer = cache_writer
        self._held: tuple[ObjectBatch, pygit2.Oid, pygit2.Oid] | None = None

    def keep(self, batch: ObjectBatch, tree: pygit2.Oid, anchor: pygit2.Oid) -> None:
        """Takes `batch` over: its objects, `tree` and the `anchor` commit of it."""
        self.write()  # an earlier capture's, had nobody handed it over
        self._held = (batch, tree, anchor)

    def source(self, repo: pygit2.Repository) -> tuple[pygit2.Repository, Reader | None]:
        """Where the last snapshot's objects can be read (grafting.copy_missing): the
        batch while it holds them, else `repo`, once their write (if one runs) is done."""
        if self._held is not None and self._held[0].holding:
            batch = self._held[0]
            return batch.repo, batch.read
        self._cache_writer.settle()
        return repo, None

    def settle(self) -> None:
        """Writes what is held, if anything, and waits until the cache writer is done
        (a failed write sets its `objects_lost`, which the scanner's next capture reads)."""
        self.write()
        self._cache_writer.settle()

    def write(self) -> None:
        """Writes the held objects, durably, then the anchor naming them, on the cache
        writer's thread: the caller has copied what it needed."""
        if self._held is None:
            return
        (batch, tree, anchor), self._held = self._held, None
        private = self._private

        def write() -> None:
            try:
                batch.commit(tree, anchor)  # on disk before the anchor names them
                private.anchor(anchor, batch.target)
            finally:
                batch.close()  # (the cache writer's own permissions pass follows)

        self._cache_writer.start_objects(write)
