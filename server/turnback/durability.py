"""Making writes durable before a restore is declared done.

Git objects and refs are fsynced by libgit2 (enabled on import of this
module). Work-tree files are written by rename without a per-file fsync;
one syncfs of their file system before the timeline's commit point flushes
them all at once, so a power loss can never leave a committed restore whose
files are still only in the page cache.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

import pygit2
from pygit2.enums import Option

pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_syncfs = getattr(_libc, "syncfs", None)


def make_durable(root: Path) -> None:
    """Flushes the file system holding `root` (all of it where syncfs is missing)."""
    if _syncfs is None:
        os.sync()
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        if _syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
