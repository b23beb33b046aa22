"""What a state's capture left out, as a restore must see it: nothing is written or deleted
where that capture could not look, or did not hold what stood there.

Skipped entries come as the timeline stores them (`{path, reason}`, and a left-out
folder's `dirId`) or as a capture's `Skipped`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core.worktree import in_work_tree
from ..results import SkippedPath
from ..snapshot.captured import Snapshot
from ..snapshot.untracked import (
    EXCLUDED_DIRECTORY,
    INVALID_PATH,
    SPECIAL_FILE,
    TOO_LARGE,
    TOO_MANY_FILES,
    UNREADABLE,
    directory_identity,
)

#: Why a capture left out what no snapshot of turnback's then holds: a submodule's or a
#: nested repository's files are their own repository's, which the workspace captures.
HELD_NOWHERE = frozenset(
    {TOO_LARGE, TOO_MANY_FILES, EXCLUDED_DIRECTORY, SPECIAL_FILE, UNREADABLE, INVALID_PATH}
)


def moved_left_out(root: os.PathLike[str], skipped: list[dict[str, str]]) -> dict[str, str]:
    """The directories the target's capture left out that are no longer where they were,
    by identity ("dev:ino") → reason: the turns may have renamed one (`mv env config`),
    and what is in it now is what was in it then, which no snapshot holds."""
    moved = {}
    for entry in skipped:
        identity = entry.get("dirId")
        if identity and directory_identity(os.path.join(root, entry["path"])) != identity:
            moved[identity] = entry["reason"]
    return moved


def moved_here(root: os.PathLike[str], path: str, moved: dict[str, str]) -> str | None:
    """The reason of a moved left-out directory that now holds `path`, if one does."""
    parts = path.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        identity = directory_identity(os.path.join(root, *parts[:depth]))
        if identity in moved:
            return moved[identity]
    return None


def unreadable_in(snap: Snapshot) -> Callable[[str], bool]:
    """Whether `snap`'s capture could not look at a path (or a folder above it)."""
    reasons = {s.path: s.reason for s in snap.skipped if s.reason == UNREADABLE}
    return lambda path: bool(reasons) and reason_at(reasons, path) is not None


def reason_at(reasons: dict[str, str], path: str) -> str | None:
    """The reason recorded for `path` or the nearest folder above it."""
    parts = path.split("/")
    for depth in range(len(parts), 0, -1):
        found = reasons.get("/".join(parts[:depth]))
        if found:
            return found
    return None


def gone_left_out(
    root: str, skipped: list[dict[str, str]], described: set[str]
) -> list[SkippedPath]:
    """What the target's capture left out, held by no snapshot, that is gone from the work
    tree now (the turns deleted a user's large file, say): a restore cannot bring it back,
    and says so rather than let the user believe it did. `described`: paths the restore
    already names."""
    return [
        SkippedPath(entry["path"], entry["reason"])
        for entry in skipped
        if entry["reason"] in HELD_NOWHERE
        and entry["path"] not in described
        and not in_work_tree(root, entry["path"])
    ]
