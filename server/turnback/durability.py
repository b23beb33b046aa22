"""Making writes durable before a restore is declared done.

Git objects and refs are fsynced by libgit2 (enabled on import of this
module). Work-tree files are written by rename without a per-file fsync;
one syncfs of their file system before the timeline's commit point flushes
them all at once, so a power loss can never leave a committed restore whose
files are still only in the page cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
from pygit2.enums import Option

from .native import linux_libc

pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)


def make_durable(root: Path) -> None:
    """Flushes the file system holding `root` (all of it where syncfs is missing)."""
    syncfs = getattr(linux_libc(), "syncfs", None)
    if syncfs is None:
        os.sync()
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
