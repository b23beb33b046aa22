"""The private index's tree after a full scan, written path-wise from the last one.

libgit2's `write_tree` writes only the trees on changed paths, but then rebuilds the
index's whole cache-tree from what it wrote (`git_tree_cache_read_tree`): it reads back
every tree of the snapshot, 5,095 on linux's tree, 45-50 ms of a full scan there, for a
turn that changed ten files. A scan knows which paths it touched, and the scanner knows
the tree it wrote last: that tree with those paths set or removed (`tree_with`) is the
same tree, for the cost of the directories on the touched paths.

The cache-tree left behind is stale on those paths. Nothing reads it meanwhile but
`write_tree` itself, which refreshes it; the saved index file gets a fresh one from the
cache writer (cachewrite.py), so the next process finds its tree without rebuilding.
"""

from __future__ import annotations

import pygit2

from ..core.objectwrites import written
from ..core.treeops import Entry, tree_with

#: Past this many touched paths, libgit2's write_tree is as fast: most trees differ anyway
#: (1,000 scattered files touch most of linux's directories).
PATHWISE_UP_TO = 256


def entries_of(index: pygit2.Index, paths: set[str]) -> dict[str, Entry | None]:
    """Each path's entry in `index`, None where the index holds none."""
    changes: dict[str, Entry | None] = {}
    for path in paths:
        try:
            entry = index[path]
        except KeyError:
            changes[path] = None
        else:
            changes[path] = Entry(str(entry.id), int(entry.mode))
    return changes


def index_tree(
    index: pygit2.Index,
    repo: pygit2.Repository,
    last: pygit2.Oid | None,
    touched: set[str],
) -> pygit2.Oid:
    """The tree `index` holds, where `last` was its tree before `touched` paths changed
    (None: unknown, so libgit2 writes it whole)."""
    if last is None or len(touched) > PATHWISE_UP_TO:
        return written(lambda: index.write_tree(repo))
    return tree_with(repo, repo[last], entries_of(index, touched))
