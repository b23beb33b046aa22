"""Index entries that carry their stat data, so a hashed file is not hashed again.

pygit2's IndexEntry holds only path, id and mode: an entry added that way has no
stat data, every later scan must rehash the file to learn it did not change, and
libgit2's UPDATE_INDEX does not fill it in. This builds the C entry with the
lstat taken before the file was hashed (the hash is only trusted when the file's
size and mtime were the same after reading it), as `git add` does.

An entry whose file changed within `RACY_NS` of now is stored with size 0, so the next
scan hashes the file again: where timestamps are coarse (whole seconds on ext3, HFS+ and
FAT; a kernel tick elsewhere), a same-size edit made in the same tick after this hash
leaves the stat data as it was. git marks such entries "racily clean" against its index
file's mtime as it writes it; libgit2 does so only for a repository's own index, and
turnback's is written later, on another thread, so it is done here, at the hash.
"""

from __future__ import annotations

import os
import time

import pygit2

from .pygit2_internals import add_entry, new_entry

_MASK32 = 0xFFFFFFFF
_NS = 1_000_000_000
#: A change this close to now may share its timestamp with a later one (FAT keeps 2 s).
RACY_NS = 3 * _NS


def _seconds(ns: int) -> int:
    """A time's whole seconds as the index's signed 32-bit field holds them (libgit2 and git
    truncate a `time_t` the same way): a file dated before 1970 or after 2038 still fits."""
    return ((ns // _NS + (1 << 31)) & _MASK32) - (1 << 31)


class InvalidPath(ValueError):
    """A name git refuses to keep in an index (`git~1`, `.git.`, `.GIT `: names Windows or
    macOS would take for `.git`); `git add` refuses it the same way."""


def add_with_stat(
    index: pygit2.Index, path: str, oid: pygit2.Oid, mode: int, st: os.stat_result
) -> None:
    entry, _name = new_entry(path, oid, mode)
    entry.ctime.seconds = _seconds(st.st_ctime_ns)
    entry.ctime.nanoseconds = st.st_ctime_ns % _NS
    entry.mtime.seconds = _seconds(st.st_mtime_ns)
    entry.mtime.nanoseconds = st.st_mtime_ns % _NS
    entry.dev = st.st_dev & _MASK32
    entry.ino = st.st_ino & _MASK32
    entry.uid = st.st_uid & _MASK32
    entry.gid = st.st_gid & _MASK32
    racy = st.st_mtime_ns >= time.time_ns() - RACY_NS  # git's rule: by the mtime
    entry.file_size = 0 if racy else st.st_size & _MASK32  # 0: hashed again next time
    try:
        add_entry(index, entry)
    except pygit2.GitError as error:
        if str(error).startswith("invalid path"):
            raise InvalidPath(path) from None
        raise
