"""What stands at a work-tree path now, as git would store it, looked at without risk.

Recovery and rollback compare each path with the states they know before writing, so
they never write over what the user made since. Looking must never block or follow a
link: the path is lstat'ed first, only a regular file is opened (O_NOFOLLOW and
O_NONBLOCK, so a FIFO swapped in meanwhile cannot hold the process), and a FIFO,
socket or device is reported as special and never opened at all.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from .rawhash import REGULAR_MODES, file_mode
from .treeops import Entry
from .worktree import Stamp, UnsafePath, check_path, stamp_of, under_real_dirs


@dataclass(frozen=True)
class OnDisk:
    """A path's state: the entry git would store (None: nothing, or a directory)."""

    entry: Entry | None
    #: A FIFO, socket or device, or a file that changed while it was read: the user's.
    foreign: bool = False
    #: The lstat stamp it was seen with (None: nothing or a directory), to notice a change.
    stamp: Stamp | None = None
    #: False on a disk that keeps no exec bits: a regular file matches either mode.
    exec_bits: bool = True

    def matches(self, entry: Entry | None) -> bool:
        if self.foreign:
            return False
        if self.exec_bits or self.entry is None or entry is None:
            return self.entry == entry
        return self.entry.oid == entry.oid and {self.entry.mode, entry.mode} <= set(REGULAR_MODES)


def look(root: Path, path: str, exec_bits: bool = True) -> OnDisk:
    """The state of `path` under `root`, reading only regular files and symlinks
    (`exec_bits` False: on a disk that keeps none, rawhash.py)."""
    try:
        parts = check_path(path)
    except UnsafePath:
        return OnDisk(None, foreign=True)
    if not under_real_dirs(root, path):
        return OnDisk(None)  # nothing of the work tree's is really at this path
    full = os.path.join(root, *parts)
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return OnDisk(None)
    if stat.S_ISDIR(st.st_mode):
        return OnDisk(None)  # as good as nothing: a write replaces it only when empty
    if stat.S_ISLNK(st.st_mode):
        target = os.fsencode(os.readlink(full))
        return OnDisk(Entry(str(pygit2.hash(target)), FileMode.LINK), stamp=stamp_of(st))
    if not stat.S_ISREG(st.st_mode):
        return OnDisk(None, foreign=True, stamp=stamp_of(st))
    data, seen = _read_regular(full)
    if data is None or seen is None or stamp_of(seen) != stamp_of(st):
        return OnDisk(None, foreign=True, stamp=stamp_of(st))  # changing as we look
    entry = Entry(str(pygit2.hash(data)), file_mode(st))
    return OnDisk(entry, stamp=stamp_of(st), exec_bits=exec_bits)


def _read_regular(full: str) -> tuple[bytes | None, os.stat_result | None]:
    """The bytes of a regular file, and its lstat after reading; never blocks."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(full, flags)
    except OSError:
        return None, None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks), os.lstat(full)
    except OSError:
        return None, None
