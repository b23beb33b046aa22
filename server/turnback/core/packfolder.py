"""Lets go of the packs git deletes under a long-lived repository handle.

libgit2 keeps every pack it has opened until the handle's object database is freed; a
refresh adds new packs and never drops gone ones. After `git gc` or `git repack -d`, a
server that runs for days would hold the old packs open: their disk space (after a full
repack, the size of the repository) and their mappings, until the editor closes. So the
engine looks at the pack folder before each operation (one stat when nothing changed),
and when a pack it saw before is gone, gives the handle a new object database: the old
one, and the files it held open, are freed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2


class PackFolder:
    """The `.pack` files of one objects folder, as they stood at the last look."""

    def __init__(self, objects_dir: Path) -> None:
        self.objects_dir = objects_dir
        self._path = objects_dir / "pack"
        self._stamp = self._mtime()
        self._names = self._list()

    def lost_packs(self) -> bool:
        """Whether a pack seen at the last look is gone now (the look is then this one)."""
        stamp = self._mtime()
        if stamp == self._stamp:
            return False
        names = self._list()
        lost = bool(self._names - names)
        self._stamp, self._names = stamp, names
        return lost

    def _mtime(self) -> int | None:
        try:
            return os.stat(self._path).st_mtime_ns
        except OSError:
            return None

    def _list(self) -> frozenset[str]:
        try:
            return frozenset(name for name in os.listdir(self._path) if name.endswith(".pack"))
        except OSError:
            return frozenset()


def fresh_object_database(repo: pygit2.Repository, objects_dir: Path) -> None:
    """Gives `repo` a new object database on the same folder (loose objects, packs and
    alternates, as libgit2 opens them), freeing the old one once nothing else holds it."""
    repo.set_odb(pygit2.Odb(str(objects_dir)))
