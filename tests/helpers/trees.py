"""Trees built straight into an object database, for tests of tree walks and diffs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from turnback.core.treeops import Entry, tree_with


def tree_of(
    repo: pygit2.Repository,
    files: dict[str, tuple[int, int]],
    body: Callable[[int], bytes] = lambda n: b"%d\n" % n,
) -> pygit2.Tree:
    """A tree of `files` (path: content number, mode), each blob `body(number)`; a path
    below a file is left out, and a submodule's commit needs no object."""
    kept = {p: v for p, v in files.items() if not any(p.startswith(q + "/") for q in files)}
    entries: dict[str, Entry | None] = {}
    for path, (content, mode) in kept.items():
        oid = repo.create_blob(body(content))
        if mode == FileMode.COMMIT:
            oid = pygit2.Oid(hex=("%x" % (content + 1)).rjust(40, "0"))
        entries[path] = Entry(str(oid), mode)
    return repo[tree_with(repo, None, entries)]


def drop_loose_object(bare_root: Path, oid: pygit2.Oid) -> pygit2.Repository:
    """Deletes a loose object from a bare repository, and opens it again so that no
    cached copy of the object survives."""
    os.remove(bare_root / "objects" / str(oid)[:2] / str(oid)[2:])
    return pygit2.Repository(str(bare_root))
