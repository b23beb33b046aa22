"""A file's exact bytes as a blob: no clean filter, and never a read of a special file.

libgit2's `create_blob_fromdisk` applies the work tree's clean filters (CRLF to
LF, `ident`), so a snapshot made with it would not hold what is on disk; these
helpers read the file themselves. A file is opened without blocking and checked
to be a regular file before a byte is read, so a FIFO is never read.
"""

from __future__ import annotations

import os
import stat

import pygit2
from pygit2.enums import FileMode

from .objectwrites import write_blob_from

#: A regular file's two modes, the ones a disk without exec bits cannot tell apart.
REGULAR_MODES = (FileMode.BLOB, FileMode.BLOB_EXECUTABLE)


def file_mode(st: os.stat_result, exec_bits: bool = True, previous: int | None = None) -> int:
    """The mode git stores for the file `st` describes. On a disk that keeps no exec bits
    (`exec_bits` False: FAT, exFAT, WSL's Windows drives, where every file reads 0777) a
    regular file keeps the mode it had (`previous`), a new one is 100644: as git does
    with `core.filemode` false."""
    if stat.S_ISLNK(st.st_mode):
        return FileMode.LINK
    on_disk = FileMode.BLOB_EXECUTABLE if st.st_mode & stat.S_IXUSR else FileMode.BLOB
    return stored_mode(on_disk, exec_bits, previous)


def stored_mode(on_disk: int, exec_bits: bool, previous: int | None) -> int:
    """`file_mode` from the mode the disk shows for a regular file or a symlink."""
    if exec_bits or on_disk not in REGULAR_MODES:
        return on_disk
    return previous if previous in REGULAR_MODES else FileMode.BLOB


class SpecialFile(OSError):
    """Not a regular file (a FIFO, socket or device): never read."""


#: Files larger than this are streamed into the object database rather than read whole.
STREAM_ABOVE = 32 << 20
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def read_raw(full: str, st: os.stat_result) -> bytes | None:
    """The file's exact bytes (a symlink's target), read once, with no filter (libgit2's
    `create_blob_fromdisk` would clean CRLF and `ident`); None for a file larger than
    `STREAM_ABOVE`, for `stream_path`. A file is opened without blocking and checked to be
    a regular file before a byte is read: a FIFO is never read."""
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(os.readlink(full))
    if not stat.S_ISREG(st.st_mode):
        raise SpecialFile(f"{full} is not a regular file")
    if st.st_size > STREAM_ABOVE:
        return None
    fd = _open_regular(full)
    try:
        with open(fd, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(fd)


def stream_path(repo: pygit2.Repository, full: str) -> pygit2.Oid:
    """A regular file too large to hold in memory, streamed into the object database."""
    fd = _open_regular(full)
    try:
        with open(fd, "rb", closefd=False) as stream:
            return write_blob_from(repo, stream)
    finally:
        os.close(fd)


def _open_regular(full: str) -> int:
    """A descriptor on `full`, opened without blocking and checked to be a regular file."""
    fd = os.open(full, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpecialFile(f"{full} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd
