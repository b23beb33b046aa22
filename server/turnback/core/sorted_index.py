"""Prefix searches in an index by bisection, without building an object per entry.

git writes index entries sorted by their path's bytes (whatever core.ignoreCase says),
an index opened on its own keeps that order, and libgit2 keeps it as entries are added.
"""

from __future__ import annotations

import pygit2

from .pygit2_internals import entry_at, entry_path


def path_at(index: pygit2.Index, position: int) -> bytes:
    return entry_path(entry_at(index, position))


def first_not_below(index: pygit2.Index, key: bytes, low: int = 0, high: int = -1) -> int:
    """The first position in [low, high) whose path sorts at or after `key`."""
    high = len(index) if high < 0 else high
    while low < high:
        middle = (low + high) // 2
        if path_at(index, middle) < key:
            low = middle + 1
        else:
            high = middle
    return low


def has_entry_under(index: pygit2.Index, prefix: bytes) -> bool:
    """Whether an entry path starts with `prefix`: the first path not below it does."""
    low = first_not_below(index, prefix)
    return low < len(index) and path_at(index, low).startswith(prefix)


def children(index: pygit2.Index, prefix: bytes, low: int, high: int) -> dict[bytes, int]:
    """The names directly below `prefix` (b"" or b"dir/") among positions [low, high), each
    with how many entries it holds; one bisection per name, not a pass over the entries."""
    found: dict[bytes, int] = {}
    while low < high:
        rest = path_at(index, low)[len(prefix) :]
        name, slash, _ = rest.partition(b"/")
        # Everything under `name/` sorts before `name0` ("/" + 1 is "0").
        end = first_not_below(index, prefix + name + b"0", low, high) if slash else low + 1
        found[name] = found.get(name, 0) + end - low
        low = end
    return found
