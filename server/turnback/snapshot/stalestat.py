"""Stat data brought up to date for files rewritten with the bytes they already held.

A checkout there and back, a formatter that changed nothing, an undo then a redo: each
rewrites files without changing them. Their entries keep the blob but no longer the stat
data, so libgit2's scan hashes each one to learn that nothing changed, and says nothing
(no delta names it): the stat cache never learns, and every later full scan hashes them
all again (1,000 such files cost each full scan of linux's tree ~35 ms, for good). git's
`status` refreshes its index for this; libgit2 does so only with UPDATE_INDEX, and only
into the repository's own index, never into the index being diffed.

libgit2's perfdata tells which of the scan's groups hashed a file that no delta names
(workdir_scan.py). Once the capture has answered, the cache writer diffs those groups
again with UPDATE_INDEX through an idle handle whose own index is, meanwhile, the private
one: libgit2 refreshes exactly the entries whose content it finds unchanged, as a scan
compares them (at an equal size, which its filters never keep: seedcheck.py). No object
is written, and no tree can change.
"""

from __future__ import annotations

import pygit2
from pygit2.enums import DiffOption

from ..core.pygit2_internals import as_repository_index, diff_index_to_workdir
from .workdir_scan import Group

#: Tracked files only: an untracked file has no stat data to refresh.
REFRESH_FLAGS = DiffOption.UPDATE_INDEX | DiffOption.IGNORE_SUBMODULES


def refresh_stale(handle: pygit2.Repository, index: pygit2.Index, groups: list[Group]) -> bool:
    """Refreshes the stat data of `index`'s unchanged files in `groups`, through `handle`
    (which no other thread uses meanwhile); libgit2 then saves `index` to its file. Says
    whether it could (a Windows DLL does not export what it takes)."""
    paths = None if None in groups else [path for group in groups for path in group or []]
    with as_repository_index(handle, index) as usable:
        if usable:
            diff_index_to_workdir(handle, index, REFRESH_FLAGS, paths)
    return usable
