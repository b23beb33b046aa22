"""Every use of pygit2's private parts, in one place (checked by tests/unit/test_private_apis.py).

The public Index API cannot add an entry with its stat data (so every later scan would
rehash the file), read an entry's flags (skip-worktree, assume-unchanged) or its path by
position without building Python objects, nor diff a standalone index against a
repository. These go through pygit2's cffi handle (`Index._index`, `C`, `ffi`) and its
`Index._repo`; pyproject.toml pins pygit2 to the minor version they were checked on.
"""

from __future__ import annotations

from typing import Any

import pygit2
from pygit2 import C, ffi
from pygit2.errors import check_error
from pygit2.utils import encode_fs_path

#: A `git_index_entry *` (cffi cdata).
IndexEntry = Any


def entry_at(index: pygit2.Index, position: int) -> IndexEntry:
    return C.git_index_get_byindex(index._index, position)


def entry_path(entry: IndexEntry) -> bytes:
    return ffi.string(entry.path)


def new_entry(path: str, oid: pygit2.Oid, mode: int) -> tuple[IndexEntry, Any]:
    """A zeroed C entry for `path`; keep the second value alive until the entry is added."""
    entry = ffi.new("git_index_entry *")
    ffi.buffer(ffi.addressof(entry, "id"))[:] = oid.raw[:]
    entry.mode = int(mode)
    name = ffi.new("char[]", encode_fs_path(path))
    entry.path = name
    return entry, name


def add_entry(index: pygit2.Index, entry: IndexEntry) -> None:
    check_error(C.git_index_add(index._index, entry), io=True)


def attach_repository(index: pygit2.Index, repo: pygit2.Repository) -> None:
    """A standalone index reads and writes only its own file; diffing it needs the repo."""
    index._repo = repo
