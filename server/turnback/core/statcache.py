"""Index entries that carry their stat data, so a hashed file is not hashed again.

pygit2's IndexEntry holds only path, id and mode: an entry added that way has no
stat data, every later scan must rehash the file to learn it did not change, and
libgit2's UPDATE_INDEX does not fill it in. This builds the C entry with the
lstat taken before the file was hashed (the hash is only trusted when the file's
size and mtime were the same after reading it), as `git add` does.
"""

from __future__ import annotations

import os

import pygit2

from .pygit2_internals import add_entry, new_entry

_MASK32 = 0xFFFFFFFF


def add_with_stat(
    index: pygit2.Index, path: str, oid: pygit2.Oid, mode: int, st: os.stat_result
) -> None:
    entry, _name = new_entry(path, oid, mode)
    entry.ctime.seconds = int(st.st_ctime) & _MASK32
    entry.ctime.nanoseconds = st.st_ctime_ns % 1_000_000_000
    entry.mtime.seconds = int(st.st_mtime) & _MASK32
    entry.mtime.nanoseconds = st.st_mtime_ns % 1_000_000_000
    entry.dev = st.st_dev & _MASK32
    entry.ino = st.st_ino & _MASK32
    entry.uid = st.st_uid & _MASK32
    entry.gid = st.st_gid & _MASK32
    entry.file_size = st.st_size & _MASK32
    add_entry(index, entry)
