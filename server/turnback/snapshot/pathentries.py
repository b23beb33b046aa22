"""Paths as they are on disk now, hashed: what a restore must save before it writes.

Unlike a capture, this looks at the paths it is given and nothing else, whatever the
stat cache says, so its cost grows with the restore, never with the repository.
"""

from __future__ import annotations

import os
import stat

from ..core.rawhash import file_mode
from ..core.repository import WorkspaceRepo
from ..core.treeops import Entry
from ..core.worktree import Stamp, stamp_of, under_real_dirs
from .churn import hash_or_gone
from .untracked import (
    IGNORED,
    SPECIAL_FILE,
    UNREADABLE,
    Skipped,
    UntrackedPolicy,
    is_special,
)
from .userindex import UserIndex


def path_entries(
    ws: WorkspaceRepo,
    user_index: UserIndex,
    policy: UntrackedPolicy,
    paths: set[str],
    stamps: dict[str, Stamp | None] | None = None,
) -> tuple[dict[str, Entry | None], list[Skipped]]:
    """Each of `paths` as on disk now (None: nothing there that can be saved), hashed
    into this repository, and what was left out; Churn when a file changes mid-read.
    A path it may not even look at is left out of the changes: as the base has it.

    `stamps` gets the stamp each saved path had when it was read (None: nothing there),
    which a restore checks before it writes there: what it saved is still what it
    replaces (restore/plan.py)."""
    changes: dict[str, Entry | None] = {}
    skipped: dict[str, Skipped] = {}
    seen: dict[str, Stamp | None] = {} if stamps is None else stamps
    root = str(ws.root)
    for path in sorted(paths):
        full = os.path.join(root, path)
        try:
            st = os.lstat(full)
        except PermissionError:  # in a folder it may not list: as last captured, and
            skipped[path] = Skipped(path, UNREADABLE)  # a restore keeps whatever is there
            continue
        except OSError:
            changes[path] = seen[path] = None
            continue
        if stat.S_ISDIR(st.st_mode) or not under_real_dirs(root, path):
            changes[path] = seen[path] = None
            continue
        tracked = not ws.shadow and user_index.tracks(path)
        verdict = None if tracked else policy.file_verdict(path, st)
        if tracked and is_special(st):
            verdict = Skipped(path, SPECIAL_FILE)
        if verdict is not None:
            changes[path] = None
            if verdict is not IGNORED:
                skipped[verdict.path] = verdict
            continue
        read = hash_or_gone(ws.repo, full, st)
        changes[path] = Entry(str(read[0]), file_mode(read[1])) if read is not None else None
        seen[path] = stamp_of(read[1]) if read is not None else None
    return changes, list(skipped.values())
