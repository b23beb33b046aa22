"""Finds FIFOs, sockets and devices in the work tree, which libgit2's scan never lists.

libgit2 silently skips anything that is not a file, symlink or directory, so a
FIFO a turn made would appear in no capture. A full scan therefore also walks
the work tree with `os.scandir` (the entry type comes from the directory
listing: nothing is stat-ed or opened) in a thread beside libgit2's scan, which
releases the GIL, so the walk costs a second core rather than wall-clock time.
The walk skips `.git`, nested repositories and excluded directory names; the
few names it returns are checked against the ignore rules afterwards, by the
caller's thread (a libgit2 repository must not be used by two threads at once).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from .worktree import holds_repository


class SpecialFileWalk:
    """One background walk; `result()` waits for it and returns the paths it found."""

    def __init__(self, root: str, excluded_names: Iterable[str]) -> None:
        self._root = root
        self._excluded = frozenset(excluded_names) | {".git"}
        self._found: list[str] = []
        self._thread = threading.Thread(target=self._walk, name="turnback-special", daemon=True)
        self._thread.start()

    def _walk(self) -> None:
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(os.path.join(self._root, rel_dir) if rel_dir else self._root) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in self._excluded and not holds_repository(entry.path):
                            stack.append(rel)
                    elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                        self._found.append(rel)
                except OSError:
                    continue

    def result(self) -> list[str]:
        self._thread.join()
        return sorted(self._found)
