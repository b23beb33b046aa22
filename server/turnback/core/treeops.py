"""Small, pure helpers over git trees: entries by path and changed path sets."""

from __future__ import annotations

from typing import NamedTuple

import pygit2
from pygit2.enums import FileMode

from .gitpaths import is_utf8, tree_from_index


class Entry(NamedTuple):
    """A file as git stores it: content id and mode (regular, executable or symlink)."""

    oid: str
    mode: int


def entry_at(tree: pygit2.Tree | None, path: str) -> Entry | None:
    """The file at `path` in `tree`; None when absent or a directory (or a submodule)."""
    if tree is None:
        return None
    try:
        obj = tree[path]
    except KeyError:
        return None
    if obj.filemode in (FileMode.TREE, FileMode.COMMIT):
        return None
    return Entry(str(obj.id), int(obj.filemode))


def changed_paths(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None
) -> set[str]:
    """Every file path whose content or mode differs between two trees."""
    if old is None and new is None:
        return set()
    if old is None:
        diff = new.diff_to_tree(swap=True)  # type: ignore[union-attr]
    elif new is None:
        diff = old.diff_to_tree()
    else:
        diff = repo.diff(old, new)
    paths: set[str] = set()
    for delta in diff.deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
    return paths


def is_dir_in(tree: pygit2.Tree | None, path: str) -> bool:
    if tree is None or not path:
        return tree is not None
    try:
        return tree[path].filemode == FileMode.TREE
    except KeyError:
        return False


def tree_with(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: dict[str, Entry | None]
) -> pygit2.Oid:
    """`base` with some paths set or removed; only trees on changed paths are rewritten."""
    if not all(is_utf8(path) for path in changes):
        return tree_from_index(repo, base, changes)  # type: ignore[arg-type]
    return _tree_with(repo, base, changes)


def _tree_with(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: dict[str, Entry | None]
) -> pygit2.Oid:
    direct: dict[str, Entry | None] = {}
    nested: dict[str, dict[str, Entry | None]] = {}
    for path, entry in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = entry
        else:
            direct[head] = entry
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, entry in direct.items():
        if entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=entry.oid), entry.mode)
    for name, sub_changes in nested.items():
        if direct.get(name) is not None:
            continue  # a file replaced the directory: nothing below it survives
        existing = builder.get(name)
        sub_base = repo[existing.id] if existing and existing.filemode == FileMode.TREE else None
        if sub_base is None and all(entry is None for entry in sub_changes.values()):
            continue  # removing paths below a file (or below nothing) leaves it alone
        sub_oid = _tree_with(repo, sub_base, sub_changes)  # type: ignore[arg-type]
        if len(repo[sub_oid]) == 0:  # type: ignore[arg-type]
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, sub_oid, FileMode.TREE)
    return builder.write()
