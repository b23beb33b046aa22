"""File names as the disk and git hold them: bytes, which need not be UTF-8.

turnback carries paths as `str` the way Python's os module does: a byte that is
not part of valid UTF-8 becomes a lone surrogate U+DC80..U+DCFF (PEP 383's
surrogateescape), so os calls and pygit2's index, tree and diff calls take and
give such names byte-exactly, and JSON carries them as `\\udcXX` escapes. A few
pygit2 calls encode strictly instead; this module stands in for them.
"""

from __future__ import annotations

import re

import pygit2
from pygit2.enums import FileMode

#: A byte no gitignore pattern spells, standing in for each byte that is not UTF-8.
_STAND_IN = "\x01"
_ESCAPED = re.compile("[\udc80-\udcff]")


def is_utf8(path: str) -> bool:
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return True


def path_is_ignored(repo: pygit2.Repository, path: str) -> bool:
    """`repo.path_is_ignored` for any file name.

    pygit2 passes the name to libgit2 as strict UTF-8. A name that is not is
    asked with each foreign byte replaced by one stand-in byte, which `*`, `?`
    and bracket classes match as they would match the byte; only a pattern that
    spells the raw byte itself (a .gitignore that is not UTF-8) cannot match.
    """
    try:
        return repo.path_is_ignored(path if is_utf8(path) else _ESCAPED.sub(_STAND_IN, path))
    except pygit2.GitError:
        return False


def tree_from_index(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: dict[str, tuple[str, int] | None]
) -> pygit2.Oid:
    """`base` with paths set (oid, mode) or removed, built through an index.

    The path-wise tree builder cannot take a name that is not UTF-8 (pygit2's
    TreeBuilder encodes strictly); an index can. It costs a whole-tree write,
    so it is only used when such a name changed.
    """
    index = pygit2.Index()
    if base is not None:
        index.read_tree(base)
    files = {path for path, entry in changes.items() if entry is not None}
    for path, entry in sorted(changes.items()):  # a directory's removal before its new files
        parts = path.split("/")
        if any("/".join(parts[:depth]) in files for depth in range(1, len(parts))):
            continue  # a file replaced a directory above it: nothing below survives
        if path in index:
            index.remove(path)
        index.remove_directory(path)  # a file replacing a directory: nothing below survives
        if entry is None:
            continue
        for depth in range(1, len(parts)):
            ancestor = "/".join(parts[:depth])
            if ancestor in index:
                index.remove(ancestor)  # a directory replacing a file
        index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry[0]), FileMode(entry[1])))
    return index.write_tree(repo)
