"""The watcher's capture: only the paths a watcher saw change are looked at.

A mixin of `Scanner` (scanner.py), which holds the state both capture paths share and
falls back to its full scan when the watcher's word is not enough.
"""

from __future__ import annotations

import os
import stat

from ..config import Settings
from ..core.repository import WorkspaceRepo
from ..core.statcache import InvalidPath, add_with_stat
from ..core.treeops import Entry, tree_with
from ..core.worktree import under_real_dirs
from .captured import Snapshot
from .churn import hash_or_gone
from .heldobjects import HeldObjects
from .ignore_rules import touches_ignore_files
from .privateindex import PrivateIndex
from .scanhandles import ScanHandles
from .untracked import (
    IGNORED,
    INVALID_PATH,
    SPECIAL_FILE,
    SUBMODULE,
    UNREADABLE,
    Skipped,
    UntrackedPolicy,
    is_special,
    within_limits,
)
from .userindex import UserIndex


class ChangedPathsCapture:
    """`Scanner`'s watcher path; the scanner provides the state declared here and the
    methods it calls (`_capture`, `_policy`, `_submodules`, `_ignored_untracked`, `_mode`)."""

    ws: WorkspaceRepo
    user_index: UserIndex
    private: PrivateIndex
    handles: ScanHandles
    held: HeldObjects
    holds_objects: bool
    _left_out: dict[str, Skipped]
    _untracked_moved: bool

    def _capture_changed(self, settings: Settings, changed: set[str]) -> Snapshot:
        """The watcher's path: look only at what changed; costs grow with the change.

        The new tree is the last one with the changed paths set or removed (`tree_with`),
        so no other tree object is read or written.
        """
        tracked_before = self.user_index.tree_before_reload()
        user_index_changed = self.user_index.refresh()
        index = self.private.load()
        if self.private.tree is None or (
            user_index_changed and not self.user_index.tracks_the_same_files(tracked_before)
        ):
            # Who tracks what changed (git add, rm --cached): re-check every untracked verdict.
            return self._capture(settings, None, None)
        last, self.private.tree = self.private.tree, None  # unknown until this one succeeds
        policy = self._policy(settings)
        root = str(self.ws.root)
        skipped = self._still_left_out(changed)
        skipped.update({s: Skipped(s, SUBMODULE) for s in self._submodules()})
        changes: dict[str, Entry | None] = {}
        to_add: list[str] = []

        def drop(path: str) -> None:
            if path in index:
                index.remove(path)
            changes[path] = None

        for path in sorted(changed):
            try:
                st = os.lstat(os.path.join(root, path)) if under_real_dirs(root, path) else None
            except PermissionError:
                skipped[path] = Skipped(path, UNREADABLE)  # in a folder it may not list:
                continue  # as last captured, and a restore keeps whatever is there
            except OSError:
                st = None
            if st is None or stat.S_ISDIR(st.st_mode):
                drop(path)  # a file that is gone or became a directory; a directory gone
                if st is None:
                    index.remove_directory(path)
                elif (whole := _left_out_whole(policy, path)) is not None:
                    skipped[whole.path] = whole
                continue
            if is_special(st):
                drop(path)  # the snapshot must not claim what stood there before
                if not self._ignored_untracked(path):
                    skipped[path] = Skipped(path, SPECIAL_FILE)
                continue
            if not self.ws.shadow and self.user_index.tracks(path):
                to_add.append(path)
                continue
            verdict = policy.file_verdict(path, st)
            if verdict is None:
                to_add.append(path)
                continue
            drop(path)
            if verdict is not IGNORED:
                skipped[verdict.path] = verdict
                if verdict.path != path:  # a whole directory is now left out
                    index.remove_directory(verdict.path)
                    changes[verdict.path] = None
        if touches_ignore_files(changed) or any(not self.user_index.tracks(p) for p in changed):
            self._untracked_moved = True  # the next full scan checks every untracked verdict
        held = self.holds_objects
        batch = self.handles.object_batch(idle=held)
        try:
            for path, st in within_limits(index, to_add, settings, skipped, root):
                read = hash_or_gone(batch.blob_repo(st.st_size), os.path.join(root, path), st)
                if read is None:
                    drop(path)
                    continue
                oid, st = read
                batch.held_blob(oid, st.st_size)
                entry = Entry(str(oid), self._mode(index, path, st))
                try:
                    add_with_stat(index, path, oid, entry.mode, st)
                except InvalidPath:
                    skipped[path] = Skipped(path, INVALID_PATH)
                    continue
                changes[path] = entry
                if batch.over_limit():
                    batch.commit()
            tree = tree_with(batch.repo, batch.repo[last], changes)
            anchor = self.private.anchor_commit(batch.repo, tree)
            if held:
                self.held.keep(batch, tree, anchor)  # written once the workspace copied them
            else:
                batch.commit(tree, anchor)  # on disk before the anchor names it
                self.private.anchor(anchor)
        except BaseException:
            batch.close()
            raise
        if not held:
            batch.close()
        self.private.tree = tree
        # The index file is rewritten by the next full scan: the anchor already keeps
        # everything this in-memory index names (held objects: once written, before any
        # save), and a stale file is simply reseeded.
        self._left_out = dict(skipped)
        return Snapshot(tree=tree, skipped=sorted(skipped.values(), key=lambda s: s.path))

    def _still_left_out(self, changed: set[str]) -> dict[str, Skipped]:
        """What the last capture left out, but the changed paths (asked again) and what is
        gone. A folder left out whose files changed stays left out until the next full scan
        says otherwise: the safe way, as a restore keeps what a capture left out."""
        root = self.ws.root
        return {
            path: left
            for path, left in self._left_out.items()
            if path not in changed and left.reason != SUBMODULE and os.path.lexists(root / path)
        }


def _left_out_whole(policy: UntrackedPolicy, rel_dir: str) -> Skipped | None:
    """What a folder made or moved in is left out as, when it is left out whole (an
    excluded name such as `node_modules`, too many files): named as a full scan names it,
    with its identity, since no event of its files ever comes (it is not watched). A turn
    that moved it away was otherwise undone by deleting its files."""
    if policy.ignored(rel_dir + "/"):
        return None  # a full scan never lists it either, and no restore touches it
    verdict = policy.dir_verdict(rel_dir)
    return verdict if verdict is not None and verdict is not IGNORED else None
