"""Turns the work tree into a git tree without rehashing unchanged files.

The scanner keeps a private index (never the user's; privateindex.py): a stat
cache of the last snapshot. libgit2 compares it with the work tree by stat data,
so only files whose stat changed are hashed, and `write_tree` reuses the cached
subtrees, so only directories on changed paths become new tree objects. The
index file is seeded from the user's index, so the first capture in a repository
also starts warm; entries whose blob may not be the bytes on disk (line-ending
conversion, filters, skip-worktree) are hashed again, raw, once (seedcheck.py).

Files are always hashed raw, with no filter, and never opened unless they are
regular files: a FIFO, socket or device is reported, never read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial

import pygit2
from pygit2.enums import DeltaStatus, DiffOption

from ..config import Settings
from ..core.gitpaths import path_is_ignored
from ..core.pygit2_internals import is_missing_object
from ..core.rawhash import file_mode, stored_mode
from ..core.repository import WorkspaceRepo
from ..core.specialfiles import SpecialFiles
from ..core.statcache import InvalidPath, add_with_stat
from ..core.treeops import Entry, entries_at, tree_with
from ..core.worktree import Stamp
from ..errors import Cancelled, StorageFailed, WorkspaceTooLarge
from .cachewrite import CacheWriter
from .captured import Progress, Snapshot
from .changedscan import ChangedPathsCapture
from .churn import CHURN_ATTEMPTS, Churn, hash_or_gone, retrying
from .heldobjects import HeldObjects
from .ignore_rules import touches_ignore_files
from .indextree import index_tree
from .pathentries import path_entries
from .privateindex import PrivateIndex
from .revalidation import recheck_untracked, rules_stamp
from .scanhandles import ScanHandles
from .stalestat import refresh_stale
from .untracked import (
    IGNORED,
    INVALID_PATH,
    NESTED_REPOSITORY,
    SPECIAL_FILE,
    SUBMODULE,
    UNREADABLE,
    Skipped,
    UntrackedPolicy,
    is_below,
    is_special,
    too_deep,
    within_limits,
)
from .userindex import UserIndex, is_unreadable_index, unreadable_index
from .workdir_scan import executor, start_workdir_diff

#: Work-tree scan: untracked files listed, type changes kept, submodules left to their owners.
#: Not UPDATE_INDEX: libgit2 writes the refreshed stat data into the repository's own index
#: (the user's, loaded for it), never into the index being diffed, which it then rewrites.
SCAN_FLAGS = (
    DiffOption.INCLUDE_UNTRACKED | DiffOption.INCLUDE_TYPECHANGE | DiffOption.IGNORE_SUBMODULES
)


def _denied(libgit2_says: str) -> str:
    """libgit2's refusal to read a file, in plain words: its "failed open - 'x' is locked:
    Permission denied" reads as if another program held the file."""
    found = re.search(r"'(.+)' is locked: Permission denied", libgit2_says)
    return f"Permission denied ({found.group(1)})" if found else libgit2_says


class Scanner(ChangedPathsCapture):
    """Captures one work tree; keep it alive between captures to keep its cache warm."""

    def __init__(self, ws: WorkspaceRepo) -> None:
        self.ws = ws
        self.user_index = UserIndex(ws)
        self._cache_writer = CacheWriter(after=ws.settle_permissions)
        self.private = PrivateIndex(ws, self.user_index, self._cache_writer)
        self._last_settings: Settings | None = None
        self.handles = ScanHandles(ws)
        #: What the untracked verdicts were last checked against (revalidation.py), and
        #: whether a watcher capture has since touched untracked or ignore files.
        self._rules_checked: tuple[object, ...] | None = None
        self._untracked_moved = True
        #: What the last capture left out: a watcher capture carries it over for the paths
        #: it does not look at (an undo deletes what its "before" capture neither held nor
        #: left out, and a user's large file the agent `git add`-ed was deleted so).
        self._left_out: dict[str, Skipped] = {}
        self._special_files = SpecialFiles(str(ws.root))
        #: A member repository's (members.py): its watcher captures hold their objects
        #: until the workspace has copied them (heldobjects.py).
        self.holds_objects = False
        self.held = HeldObjects(self.private, self._cache_writer)

    def _policy(self, settings: Settings) -> UntrackedPolicy:
        """What to capture of the untracked files, under the user's index as last read."""
        return UntrackedPolicy(
            self.ws.root,
            self.ws.repo,
            settings,
            tracked_dir=self.user_index.tracks_dir,
            plain_folder=self.ws.shadow,
            is_submodule=self.user_index.is_submodule,
        )

    def capture(
        self,
        settings: Settings,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
        changed: set[str] | None = None,
    ) -> Snapshot:
        """Brings the private index in line with the work tree and writes its tree.

        With `changed` (every path that may have changed since the last capture, from a
        watcher) only those paths are looked at; without it, the whole work tree is.
        """
        self.held.settle()  # the last capture's cache write reads the index
        if self._cache_writer.tree_differed:
            self._cache_writer.tree_differed = False
            self.private.tree = None  # write the next tree whole
        if self._cache_writer.objects_lost:
            self._cache_writer.objects_lost = False
            self.private.index, self.private.tree = None, None  # start from the saved cache
        if self.private.index is not None and self.private.anchor_gone():
            self.private.index, self.private.tree = None, None  # reload: it may name pruned objects
        attempts = iter([changed] + [None] * (CHURN_ATTEMPTS - 1))

        def attempt() -> Snapshot:
            return self._attempt(settings, progress, cancelled, next(attempts))

        def reset() -> None:
            self.private.index, self.private.tree = None, None  # retry from the saved cache

        return retrying(attempt, reset, "nothing was recorded")

    def _attempt(
        self,
        settings: Settings,
        progress: Progress | None,
        cancelled: Callable[[], bool] | None,
        changed: set[str] | None,
    ) -> Snapshot:
        try:
            if (
                changed is not None
                and self.private.index is not None
                and settings == self._last_settings
            ):
                return self._capture_changed(settings, changed)
            return self._capture(settings, progress, cancelled)
        except (Cancelled, WorkspaceTooLarge, StorageFailed):
            # Drop unanchored in-memory entries; reload the saved cache.
            self.private.index, self.private.tree = None, None
            raise
        except (pygit2.GitError, KeyError) as error:
            if not isinstance(error, pygit2.GitError) and not is_missing_object(error):
                raise  # a KeyError of turnback's own
            if is_unreadable_index(error):  # a seed copied from a split index, say
                self.private.drop()  # seeded again once the user's index can be read
                raise unreadable_index(error) from None
            if "nesting too deep" in str(error):
                raise too_deep(self.ws.root, str(error)) from None  # the same every time
            if "Permission denied" in str(error):  # a file made unreadable: not a change
                raise StorageFailed.refused(_denied(str(error))) from None
            if not is_missing_object(error):
                raise Churn(str(error)) from error  # a file changed under libgit2's read
            # An object the cache named is gone (refs deleted by hand, then gc): start over.
            self.user_index.give_back()
            self.private.reseed()
            return self._capture(settings, progress, cancelled)
        finally:
            self.user_index.give_back()  # a capture that failed early may not have

    def _capture(
        self,
        settings: Settings,
        progress: Progress | None,
        cancelled: Callable[[], bool] | None,
    ) -> Snapshot:
        report = progress or (lambda _msg, _pct: None)

        def check_cancel() -> None:
            if cancelled is not None and cancelled():
                raise Cancelled()

        # Python work overlaps the index's load (C, the GIL released) when there is one,
        # rather than the scan's threads, which it would slow down: the special-file walk
        # (it needs no index), and the seeded entries' check, from the file's bytes
        # (seedcheck.py). A cold capture of linux's tree in process, 6 alternated runs:
        # 564 -> 504 ms median after a watch setup, 745 -> 640 without one.
        private = self.private
        loads = private.will_load()
        specials = self._special_files.start(settings.excluded_directories) if loads else None

        def check_seed_early() -> None:
            # The file being loaded is the seed (a new seed forgets this reading).
            if private.seeded and private.seed_check is None:
                private.seed_check = private.untrusted_in_file()

        index = private.load(user_index_too=True, meanwhile=check_seed_early)
        fresh, private.seeded = private.seeded, False  # a failed capture revalidates next time
        last, private.tree = private.tree, None  # unknown again until this capture succeeds
        if fresh:
            last = private.seed_tree(index)  # the seed's, when its cache-tree names it
        plain = self.ws.shadow
        policy = self._policy(settings)
        report("Scanning the work tree", None)
        repos = self.handles.scan_repos(index)
        scan = start_workdir_diff(repos, index, SCAN_FLAGS, str(self.ws.root))
        if specials is None:
            # Queued behind the scan's groups, on the first of its threads to finish: as a
            # third thread it took CPU from the two, while one core idled at the end (linux's
            # tree, ten 8-capture runs alternated with the third thread's: 5 ms median less).
            specials = self._special_files.start(settings.excluded_directories, executor())
        verify = fresh or private.unverified.exists()
        try:
            early, private.seed_check = private.seed_check, None
            to_add: list[str] = private.untrusted(index, early) if verify else []
        except BaseException:
            scan.wait()
            raise
        deltas = scan.result()
        check_cancel()

        # The index may stand for the user's until given back (userindex.py): nothing
        # changes it until every question to the user's index is asked.
        removed: list[str] = []
        skipped: dict[str, Skipped] = {s: Skipped(s, SUBMODULE) for s in self._submodules()}
        for delta in deltas:
            path = delta.new_file.path
            if delta.status == DeltaStatus.DELETED:
                removed.append(path)
                self._note_special(path, skipped)  # libgit2 does not list FIFOs or sockets
            elif delta.status == DeltaStatus.UNTRACKED and path.endswith("/"):
                rel_dir = path.rstrip("/")
                if os.path.lexists(self.ws.root / rel_dir / ".git"):
                    skipped[rel_dir] = Skipped(rel_dir, NESTED_REPOSITORY)
                    continue
                files, left_out = policy.walk(rel_dir)
                to_add.extend(files)
                skipped.update((s.path, s) for s in left_out)
            elif not plain and self.user_index.tracks(path):
                to_add.append(path)
            else:
                verdict = policy.file_verdict(path)
                if verdict is None:
                    to_add.append(path)
                else:
                    removed.append(path)
                    if verdict is not IGNORED:
                        skipped[verdict.path] = verdict

        walked = specials.outcome()
        for path in walked.found:
            self._note_special(path, skipped)
        unreadable = [d for d in walked.unreadable if self._note_unreadable(d, skipped)]
        for rel_dir in walked.nested:
            if rel_dir in skipped:
                continue
            if not plain and self.user_index.is_submodule(rel_dir):
                # A gitlink `git add` made of a repository without a .gitmodules entry (git
                # only warns): a submodule all the same, so the workspace takes it in.
                skipped[rel_dir] = Skipped(rel_dir, SUBMODULE)
            elif plain and not path_is_ignored(self.ws.repo, rel_dir + "/"):
                # `git init` in a folder whose files a plain folder's snapshots already hold:
                # libgit2 lists no untracked folder there, yet it is a repository now.
                skipped[rel_dir] = Skipped(rel_dir, NESTED_REPOSITORY)
        self.user_index.give_back()
        for path in removed:
            if path in index and not (unreadable and is_below(path, unreadable)):
                index.remove(path)  # (below an unreadable folder: as last seen, not gone)
        changed = {d.new_file.path for d in deltas}
        rules_changed = touches_ignore_files(changed)
        #: Every path whose index entry this capture may change (indextree.py).
        touched = {path for path in changed if not path.endswith("/")}
        rules = rules_stamp(self.ws, self.user_index.version)
        due = (
            last is None
            or self._untracked_moved
            or rules != self._rules_checked
            or self._special_files.relisted > 0
            or any(d.status == DeltaStatus.UNTRACKED for d in deltas)
        )
        self._untracked_moved = True  # until this capture succeeds
        if not fresh and (rules_changed or settings != self._last_settings or (due and not plain)):
            if last is None and not plain:
                last = private.written_tree(index)
            dropped, newly_tracked = recheck_untracked(
                self.ws, self.user_index, index, policy, skipped, changed, last
            )
            touched |= dropped
            to_add.extend(newly_tracked)
        self._last_settings = settings

        root = str(self.ws.root)
        found = within_limits(index, list(dict.fromkeys(to_add)), settings, skipped, root)
        touched.update(to_add)
        total = len(found)
        batch = self.handles.object_batch()
        try:
            for done, (path, st) in enumerate(found, 1):
                if done % 200 == 0:
                    check_cancel()
                    report(f"Hashing changed files ({done}/{total})", done * 100 // total)
                read = hash_or_gone(batch.blob_repo(st.st_size), os.path.join(root, path), st)
                if read is None:  # deleted between the scan and now
                    if path in index:
                        index.remove(path)
                    continue
                oid, st = read
                batch.held_blob(oid, st.st_size)
                try:
                    add_with_stat(index, path, oid, self._mode(index, path, st), st)
                except InvalidPath:
                    skipped[path] = Skipped(path, INVALID_PATH)
                    continue
                if batch.over_limit():
                    batch.commit()
            check_cancel()
            report("Writing the snapshot", None)
            tree = index_tree(index, batch.repo, last, touched)
            anchor = private.anchor_commit(batch.repo, tree)
            batch.commit(tree, anchor)  # on disk before the anchor or any turn names it
        finally:
            batch.close()
        private.anchor(anchor)
        private.tree = tree
        self._rules_checked, self._untracked_moved = rules, False
        unverified = private.unverified

        def verified() -> None:
            if verify:  # only once the re-hashed entries are on disk
                unverified.unlink(missing_ok=True)

        stale = scan.stale_groups()  # where libgit2 hashed files it found unchanged
        restat = partial(refresh_stale, self.handles.idle_handle(), index, stale) if stale else None
        self._cache_writer.start(
            index, private.path, verified, self.handles.cache_refresh(tree), restat
        )
        self._left_out = dict(skipped)
        return Snapshot(tree=tree, skipped=sorted(skipped.values(), key=lambda s: s.path))

    def list_directory(self, rel_dir: str) -> list[os.DirEntry[str]]:
        """Lists a work-tree directory for the watcher as it sets up, keeping the listing
        for the special-file walk: a first full scan then lists no directory a second
        time beside its scan threads (which cost a first capture ~200 ms on linux's tree)."""
        return self._special_files.list_directory(rel_dir)

    def _submodules(self) -> list[str]:
        return [] if self.ws.shadow else self.user_index.submodules()

    def _note_special(self, path: str, skipped: dict[str, Skipped]) -> None:
        """Reports `path` when a FIFO, socket or device stands there (never opening it)."""
        try:
            st = os.lstat(self.ws.root / path)
        except OSError:
            return
        if is_special(st) and not self._ignored_untracked(path):
            skipped[path] = Skipped(path, SPECIAL_FILE)

    def _note_unreadable(self, rel_dir: str, skipped: dict[str, Skipped]) -> bool:
        """Reports a directory turnback may not list, unless ignore rules leave it out anyway.

        libgit2 skips it without a word and calls the files below it deleted. Reported,
        its files stay as last captured, and a restore keeps whatever is there instead of
        writing or deleting blind."""
        tracked = not self.ws.shadow and self.user_index.tracks_dir(rel_dir)
        if not rel_dir or not (tracked or not path_is_ignored(self.ws.repo, rel_dir + "/")):
            return False
        skipped[rel_dir] = Skipped(rel_dir, UNREADABLE)
        return True

    def _ignored_untracked(self, path: str) -> bool:
        tracked = not self.ws.shadow and self.user_index.tracks(path)
        return not tracked and path_is_ignored(self.ws.repo, path)

    def release_cache_write(self) -> None:
        """Starts the stat cache's write the last capture held (cachewrite.py): the
        operation that made it has ended, and no longer needs the core or the disk."""
        self._cache_writer.release()

    def settle_cache_write(self) -> None:
        """Until the stat cache's write (and a member's held objects) are on disk."""
        self.held.settle()

    def flush(self) -> None:
        """Saves the in-memory stat cache, so the next process starts warm."""
        self.held.write()
        self.private.save()
        self.ws.settle_permissions()  # the file just written, as after an operation

    def capture_paths(
        self, settings: Settings, base: pygit2.Tree | None, paths: set[str]
    ) -> Snapshot:
        """`base` with `paths` as they are on disk now: the work a restore must save."""
        return retrying(
            lambda: self._capture_paths(settings, base, paths), lambda: None, "nothing changed"
        )

    def _capture_paths(
        self, settings: Settings, base: pygit2.Tree | None, paths: set[str]
    ) -> Snapshot:
        """`base` with `paths` as they are on disk now.

        Costs grow with `paths`, not with the repository. A path that cannot be saved
        (ignored, too large, excluded, in a nested repository) is left out of the tree,
        so a restore keeps it rather than overwrite what it could not save.
        """
        stamps: dict[str, Stamp | None] = {}
        changes, skipped = self.path_entries(settings, paths, stamps, base)
        tree = tree_with(self.ws.repo, base, changes)
        return Snapshot(tree=tree, skipped=sorted(skipped, key=lambda s: s.path), stamps=stamps)

    def _mode(self, index: pygit2.Index, path: str, st: os.stat_result) -> int:
        """The mode to store for `path`: where the disk keeps no exec bits, as captured."""
        if self.ws.keeps_exec_bits:
            return file_mode(st)
        try:
            return file_mode(st, False, index[path].mode)
        except KeyError:
            return file_mode(st, False)

    def path_entries(
        self,
        settings: Settings,
        paths: set[str],
        stamps: dict[str, Stamp | None] | None = None,
        base: pygit2.Tree | None = None,
        prefix: str = "",
    ) -> tuple[dict[str, Entry | None], list[Skipped]]:
        """Each of `paths` as on disk now, hashed into this repository (pathentries.py);
        where the disk keeps no exec bits, a file's mode is the one at `prefix` + its path
        in `base`."""
        self.user_index.refresh()
        policy = self._policy(settings)
        changes, skipped = path_entries(self.ws, self.user_index, policy, paths, stamps)
        if not self.ws.keeps_exec_bits:
            before = entries_at(base, [prefix + path for path in changes])
            for path, entry in changes.items():
                if entry is not None:
                    was = before[prefix + path]
                    kept = was.mode if was is not None else None
                    changes[path] = entry._replace(mode=stored_mode(entry.mode, False, kept))
        return changes, skipped
