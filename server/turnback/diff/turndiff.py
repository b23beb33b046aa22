"""What a turn changed, file by file: the diff result's files and one side's content.

Which files changed comes from the subtrees that differ (treeops.py), or from
libgit2's diff with rename detection when a rename or copy may be among them; the
line diffs are computed in memory with difflib, bounded so a huge file cannot
stall the server.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pygit2
from pygit2.enums import DeltaStatus, DiffOption, FileMode

from ..core import treeops
from ..core.displayread import read_for_display
from ..core.fileuri import to_fs_path
from ..core.gitpaths import is_utf8
from ..core.pygit2_internals import object_size
from ..errors import InvalidParams
from ..results import ChangedFile, FileContent, FileDiff
from .forked import Share, diff_all
from .textdiff import BINARY_SNIFF, DiffLimits, diff_file, is_binary

LIMITS = DiffLimits()


def relative_path(root: Path, path: Any) -> str:
    """A work-tree-relative path from a relative path, an absolute path or a file URI."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise InvalidParams("path", "must be a non-empty path or file URI")
    if path[:5].lower() == "file:":
        path = to_fs_path(path) or ""
    candidate = Path(os.path.normpath(path)) if path else Path(path)  # `sub/../f` as git does
    full = candidate if candidate.is_absolute() else root / candidate
    if not _inside(full, root):
        # Reached through a symlink (an editor that opened the folder by a linked path):
        # its folders resolved, the file itself kept, as a link is a file of the tree.
        full = Path(os.path.realpath(full.parent)) / full.name
    parts: list[str] = []
    for part in full.parts[len(root.parts) :] if _inside(full, root) else [None]:  # type: ignore[list-item]
        if part is None or part == "..":
            raise InvalidParams("path", f"is outside the workspace: {path}")
        if part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def _inside(full: Path, root: Path) -> bool:
    return full.parts[: len(root.parts)] == root.parts


def _blob(repo: pygit2.Repository, oid: pygit2.Oid, mode: int) -> bytes | None:
    if mode == FileMode.COMMIT:
        return b"Subproject commit " + str(oid).encode() + b"\n"
    # The object database directly: `repo[oid].data` reads a blob about twice as slowly
    # (35 against 18 ms for the 50 packed blobs of the benchmark's diff), and without the
    # hash check, which costs as much again (displayread.py). The lookup read the whole
    # blob too, so a huge one costs no more memory than before.
    data = read_for_display(repo, oid)
    if len(data) > LIMITS.max_bytes:
        # Enough for diff_file to see it is over the limit (and, from its first bytes,
        # whether it is binary) without keeping a huge blob.
        head = data[:BINARY_SNIFF]
        return head + b"\n" * (LIMITS.max_bytes + 1 - len(head))
    return data


_STATUS = {
    DeltaStatus.ADDED: "added",
    DeltaStatus.DELETED: "deleted",
    DeltaStatus.RENAMED: "renamed",
}


class Delta(NamedTuple):
    """One file a turn changed, as libgit2's diff with rename detection reports it."""

    status: str  # "added", "deleted", "renamed" or "modified"
    old_path: str
    new_path: str
    old_id: pygit2.Oid
    old_mode: int
    new_id: pygit2.Oid
    new_mode: int


#: Modes of the files the walk reports itself: regular, executable, symlink.
_FILE_MODES = {b"100644", b"100755", b"120000"}
_REGULAR = {b"100644", b"100755"}
#: The id and mode libgit2 gives the side a file is absent from.
_NO_ID = pygit2.Oid(raw=bytes(20))


def turn_deltas(repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree) -> list[Delta]:
    """The files changed between two trees, in libgit2's order and with its statuses.

    A turn that edited, added or deleted a few files (the common one) is read from the
    subtrees that differ: libgit2's diff reads every tree of both sides, 20-60 ms at 100k
    files in a server whose object cache is bounded. A turn that may hold a rename (files
    both added and deleted), a change of kind,
    a submodule or a name that is not UTF-8 goes to libgit2 and its rename detection.
    """
    changes = treeops.changed_entries(repo, old, new) if old is not None else None
    if changes is not None:
        deltas = [_walked_delta(path, was, now) for path, (was, now) in sorted(changes.items())]
        statuses = {delta.status for delta in deltas if delta is not None}
        paired = {"added", "deleted"} <= statuses
        if None not in deltas and not paired:
            return deltas  # type: ignore[return-value]
    return libgit2_deltas(repo, old, new)


def _walked_delta(path: str, was: treeops.Side, now: treeops.Side) -> Delta | None:
    """What libgit2 reports for one changed path, when it is a file edited in place,
    added or deleted; None for anything else."""
    if not is_utf8(path) or any(
        side is not None and side[0] not in _FILE_MODES for side in (was, now)
    ):
        return None
    if was is not None and now is not None:
        if was[0] != now[0] and not (was[0] in _REGULAR and now[0] in _REGULAR):
            return None  # a file become a symlink or back: libgit2's typechange
        return Delta(
            "modified",
            path,
            path,
            pygit2.Oid(raw=was[1]),
            int(was[0], 8),
            pygit2.Oid(raw=now[1]),
            int(now[0], 8),
        )
    if now is not None:
        return Delta("added", path, path, _NO_ID, 0, pygit2.Oid(raw=now[1]), int(now[0], 8))
    if was is not None:
        return Delta("deleted", path, path, pygit2.Oid(raw=was[1]), int(was[0], 8), _NO_ID, 0)
    return None


def libgit2_deltas(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree
) -> list[Delta]:
    # A change of kind (a file become a symlink or a submodule) is one delta, as git
    # diffs it: split into a deletion and an addition, the path was listed twice.
    typechange = DiffOption.INCLUDE_TYPECHANGE
    if old is None:
        diff = new.diff_to_tree(swap=True, flags=typechange)
    else:
        diff = repo.diff(old, new, flags=typechange)
    diff.find_similar()
    deltas = []
    for delta in diff.deltas:
        before, after = delta.old_file, delta.new_file
        if delta.status == DeltaStatus.COPIED:
            # `diff.renames = copies` pairs a new file with a similar one: it is added, as
            # git diff shows it by default (its hunks were the other file's, under its name).
            mode = int(after.mode)
            deltas.append(Delta("added", after.path, after.path, _NO_ID, 0, after.id, mode))
            continue
        deltas.append(
            Delta(
                _STATUS.get(delta.status, "modified"),
                before.path,
                after.path,
                before.id,
                int(before.mode),
                after.id,
                int(after.mode),
            )
        )
    return deltas


def renamed_from(
    repo: pygit2.Repository, before: pygit2.Tree | None, end: pygit2.Tree, path: str
) -> treeops.Entry | None:
    """The entry a turn renamed to `path`, as its diff pairs them (so that a lens on a file
    the agent renamed and edited reverts the edit, not the whole file)."""
    for delta in turn_deltas(repo, before, end):
        if delta.status == "renamed" and delta.new_path == path:
            return treeops.entry_at(before, delta.old_path)
    return None


def changed_files(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree
) -> list[ChangedFile]:
    """The files a turn changed, without their line diffs: cheap enough for every turn."""
    out = []
    for status, old_path, new_path, *_ in turn_deltas(repo, old, new):
        path = old_path if status == "deleted" else new_path
        out.append(ChangedFile(path, old_path if status == "renamed" else None, status))
    return out


def file_content(
    repo: pygit2.Repository, tree: pygit2.Tree | None, content: FileContent
) -> FileContent:
    """One side of a file for a diff view: `content` (no text yet) with its text or flags."""
    try:
        entry = tree[content.path] if tree is not None else None
    except KeyError:
        entry = None
    if entry is None or entry.filemode in (FileMode.TREE, FileMode.COMMIT):
        return content
    blob = repo[entry.id]
    found = replace(content, exists=True, size=blob.size)
    data = blob.data
    if blob.size > LIMITS.max_bytes:
        return replace(found, too_large=True, binary=is_binary(data))
    if is_binary(data):
        return replace(found, binary=True)
    return replace(found, text=data.decode(errors="replace"))


def diff_trees(
    repo: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree,
    path: str | None,
    context: int,
) -> list[FileDiff]:
    shares = []
    for delta in turn_deltas(repo, old, new):
        if path and not any(
            p == path or p.startswith(path + "/") for p in (delta.old_path, delta.new_path)
        ):
            continue
        shares.append(_share(repo, delta, context))
    return diff_all(shares)


def _share(repo: pygit2.Repository, delta: Delta, context: int) -> Share:
    """The file's diff to run, sized from the object headers (nothing read yet)."""
    added, deleted = delta.status == "added", delta.status == "deleted"
    sides = [] if added else [(delta.old_id, delta.old_mode)]
    sides += [] if deleted else [(delta.new_id, delta.new_mode)]

    def load() -> Callable[[], FileDiff]:
        before = None if added else _blob(repo, delta.old_id, delta.old_mode)
        after = None if deleted else _blob(repo, delta.new_id, delta.new_mode)
        modes = {}
        if not (added or deleted) and delta.old_mode != delta.new_mode:
            modes = {"old_mode": delta.old_mode, "new_mode": delta.new_mode}
        return lambda: dataclasses.replace(
            diff_file(
                delta.old_path if deleted else delta.new_path,
                before,
                after,
                old_path=delta.old_path if delta.status == "renamed" else None,
                context=context,
                limits=LIMITS,
            ),
            **modes,
        )

    return Share(sum(_size(repo, oid, mode) for oid, mode in sides), load)


def _size(repo: pygit2.Repository, oid: pygit2.Oid, mode: int) -> int:
    """What reading the side costs in memory (and the diff in time), bounded as `_blob`."""
    if mode == FileMode.COMMIT:
        return 0
    try:
        return min(object_size(repo, oid), LIMITS.max_bytes + 1)
    except (KeyError, pygit2.GitError):
        return 0  # `_blob` says what is missing, as it did before
