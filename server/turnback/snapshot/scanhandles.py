"""The libgit2 handles a work tree's captures read and write objects through, and the
packs behind them.

A scan on several threads needs a handle per thread (libgit2 objects are not shared
between threads); a capture writes its objects through a batch (objectbatch.py), held
in memory until the capture writes them at once; and a handle that holds a pack git
deleted must be let go of, or the deleted file's disk space stays taken (packfolder.py).
"""

from __future__ import annotations

import pygit2

from ..core.locking import wait_until_free
from ..core.objectbatch import ObjectBatch
from ..core.ownpacks import OwnPacks
from ..core.packfolder import PackFolder, fresh_object_database
from ..core.repository import WorkspaceRepo
from .workdir_scan import PARALLEL_FROM, threads


class ScanHandles:
    def __init__(self, ws: WorkspaceRepo) -> None:
        self.ws = ws
        #: The scan threads' handles, opened by the first parallel scan.
        self.thread_repos: list[pygit2.Repository] = []
        self._idle: pygit2.Repository | None = None
        self._packs = PackFolder(ws.objects_dir)
        self._own_packs = OwnPacks(ws.objects_dir, ws.lock_path.parent / "packs")

    def scan_repos(self, index: pygit2.Index) -> list[pygit2.Repository]:
        """One handle per scan thread; the workspace's own when one thread will do."""
        if len(index) < PARALLEL_FROM or threads() < 2:
            return [self.ws.repo]
        if not self.thread_repos:
            self.thread_repos = [self.ws.open_again() for _ in range(threads())]
        return self.thread_repos

    def idle_handle(self) -> pygit2.Repository:
        """A handle no capture uses until the next one settles the cache writer: a scan
        thread's, or one of its own for a scan that had no threads."""
        if self.thread_repos:
            return self.thread_repos[0]
        if self._idle is None:
            self._idle = self.ws.open_again()
        return self._idle

    def cache_refresh(self, tree: pygit2.Oid) -> tuple[pygit2.Repository, pygit2.Oid] | None:
        """What the cache writer needs to refresh the saved cache-tree: a handle of the
        scan threads' (idle until the next capture settles the write). A small index
        has none, and rebuilding its cache-tree at the next load is cheap."""
        return (self.thread_repos[0], tree) if self.thread_repos else None

    def object_batch(self, idle: bool = False) -> ObjectBatch:
        """Where a capture writes its objects: held in memory, then written at once,
        loose and flushed together when they are few, as one pack when they are many.
        `idle`: written through `idle_handle`, for a batch the cache writer's thread
        commits (heldobjects.py)."""
        target = self.idle_handle() if idle else self.ws.repo
        return ObjectBatch(target, self.ws.objects_dir, packs=self._own_packs)

    def packs_due(self) -> bool:
        """Whether captures listed packs to unpack since `unpack_packs` last ran."""
        return self._own_packs.due

    def unpack_packs(self) -> None:
        """Writes the listed packs' objects loose (ownpacks.py), reading through a handle
        of its own that is freed at once: it would otherwise hold the deleted packs open,
        and libgit2 objects are not shared between threads."""
        handle = self.ws.open_again()
        try:
            self._own_packs.unpack(handle, lambda: wait_until_free(self.ws.lock_path))
        finally:
            handle.free()

    def release_deleted_packs(self) -> None:
        """A fresh object database for this repository's handle when git deleted a pack
        it may hold open; the scan threads' handles are opened again (packfolder.py)."""
        if self._packs.lost_packs():
            fresh_object_database(self.ws.repo, self._packs.objects_dir)
            self.thread_repos, self._idle = [], None
