"""Saves the stat cache after a capture has answered, on another thread.

Rewriting a 100k-entry index file takes ~25 ms, and nothing the capture returns depends
on it: the anchor ref already keeps every object the in-memory index names, and the file
only lets the next process start warm. The caller settles the write before it touches
the index again (the write reads it) and before anything replaces the file.

The write is held until the operation that made it has ended (`release`, which the
engine calls as it lets go of the repository lock): started as the scan ended, it took a
core and the disk from the turn's own record, whose flushes then also waited for the
index file's (a full scan of linux's tree, 30 alternated pairs: 185.7 -> 179.9 ms).

A full scan writes its tree path-wise (indextree.py) and leaves the index's cache-tree
stale; the write refreshes it first, with a repository handle no other thread uses, so
the next process reads its tree from the file instead of rebuilding it. The refreshed
tree must be the one the scan wrote: a difference is logged and reported to the scanner,
which then writes its next tree whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pygit2

from ..core.objectwrites import written
from ..errors import StorageFailed
from .workdir_scan import executor

log = logging.getLogger(__name__)

#: How old a lock beside the index file must be to be a dead writer's. A write holds it
#: for milliseconds; one a process left when it was killed mid-write (a harness's kill
#: right after the answer) made every later write fail, and every capture start cold.
STALE_LOCK_SECONDS = 60.0


def write_index_file(index: pygit2.Index, path: Path) -> None:
    """`index.write()` to its file `path`, past a lock that a killed writer left there."""
    try:
        index.write()
    except pygit2.GitError:
        lock = path.with_name(path.name + ".lock")
        try:
            stale = time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS
        except OSError:
            stale = False
        if not stale:
            raise
        log.warning("turnback removed a stale lock on its scan cache: %s", lock)
        lock.unlink(missing_ok=True)
        index.write()


class CacheWriter:
    """At most one write of one scanner's private index, held or pending. Each write is
    followed by `after` (the repository's permissions pass: the operation's own came
    before the write, which is held until the operation ends)."""

    def __init__(self, after: Callable[[], None] = lambda: None) -> None:
        self._after = after
        #: A write not started yet (`release` starts it), and one started.
        self._held: Callable[[], None] | None = None
        self._pending: Future[None] | None = None
        #: Set when a refreshed cache-tree differed from the tree the scan wrote.
        self.tree_differed = False
        #: Set when held objects (heldobjects.py) could not be written: the in-memory
        #: index names objects the repository lacks.
        self.objects_lost = False

    def start(
        self,
        index: pygit2.Index,
        path: Path,
        then: Callable[[], None],
        refresh: tuple[pygit2.Repository, pygit2.Oid] | None = None,
        first: Callable[[], object] | None = None,
    ) -> None:
        """Holds a write of `index` to its file `path`, then `then` (only if it succeeded).
        With `refresh` (a handle only this write uses, and the tree the index should
        hold), the index's cache-tree is rebuilt first; `first` runs before anything
        (stat data brought up to date: stalestat.py)."""
        self.settle()

        def write() -> None:
            if first is not None:
                first()
            if refresh is not None:
                repo, expected = refresh
                tree = written(lambda: index.write_tree(repo))
                if tree != expected:
                    self.tree_differed = True
                    log.error(
                        "turnback's path-wise snapshot tree %s differs from its index's %s; "
                        "the next capture writes the whole tree",
                        expected,
                        tree,
                    )
            write_index_file(index, path)
            then()

        self._held = write

    def start_objects(self, write: Callable[[], None]) -> None:
        """Holds `write`, a member capture's held objects (heldobjects.py), for this thread."""
        self.settle()

        def job() -> None:
            try:
                write()
            except BaseException:
                self.objects_lost = True
                raise

        self._held = job

    def release(self) -> None:
        """Starts the held write, if any: the operation that made it has ended."""
        held, self._held = self._held, None
        if held is not None:
            self._pending = executor().submit(self._then_after, held)

    def _then_after(self, write: Callable[[], None]) -> None:
        try:
            write()
        finally:
            self._after()

    def settle(self) -> None:
        """Waits for the write, held or pending; a failed one only leaves the older file
        (a cache)."""
        self.release()
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            pending.result()
        except (OSError, pygit2.GitError, StorageFailed) as error:
            log.warning(
                "turnback could not save its scan cache (%s); the next process rescans", error
            )
