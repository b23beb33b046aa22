"""What a long-lived process knows of its work tree between captures, through inotify.

A capture asks `changes()` which paths changed since the last one, and None sends it
down the full scan. The watcher's paths stand for the whole tree only after a full
scan that began once every watch was set up, less than FULL_SCAN_INTERVAL ago, and
under the same ignore rules (info/exclude, git config and core.excludesFile send no
event). After each capture that succeeded, `captured` notes what the next one needs.

Ignored directories are not watched unless they hold tracked files; a full scan, which
every ignore-rule change brings, and a new version of the user's index ask the skipped
ones again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import pygit2

from ..core.gitpaths import path_is_ignored
from ..core.repository import WorkspaceRepo
from . import fswatch
from .ignore_candidates import IgnoreCandidates
from .ignore_rules import touches_ignore_files
from .members import WorkspaceScanner
from .revalidation import ignore_files, rule_files_stamp

#: Even with a watcher, a full scan runs at least this often: a safety net for changes
#: inotify cannot see (network file systems, writes through mmap, a write through a hard
#: link seen under its other names).
FULL_SCAN_INTERVAL = 300.0


class TreeWatch:
    """The watcher of one work tree and what its captures have seen; the caller
    serialises every call (the engine's lock)."""

    def __init__(
        self,
        ws: WorkspaceRepo,
        scanner: WorkspaceScanner,
        excluded: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.ws = ws
        self.scanner = scanner
        #: The names of the directories no capture takes in untracked (the settings' now).
        self._excluded = excluded
        self.watcher: fswatch.Watcher | None = None
        self._last_full_scan: float | None = None
        #: The user's index version the skipped directories were checked under.
        self._watched_with: object = None
        #: The ignore-rule sources' stamps at the last capture that succeeded, and now.
        self._seen_rules: object = None
        self._rules: object = None
        #: Which directories libgit2 must be asked about (ignore_candidates.py).
        self._candidates: IgnoreCandidates | None = None
        #: While `start` loads the user's index beside its walk.
        self._user_index_loading = False

    def start(self, give_way: Callable[[], bool] | None = None) -> bool:
        """Sets the watches up; False where inotify cannot watch this tree. Raises
        `fswatch.GaveWay` once `give_way` says so (asked before each directory)."""
        if not fswatch.available() or not fswatch.watchable(str(self.ws.root)):
            return False
        user_index = self.scanner.user_index
        private = self.scanner.root.private
        # Loaded beside the walk (~100 ms on linux's tree): only an ignored directory
        # needs it, to know if it holds tracked files, and the walk skips those until
        # it is loaded, then asks again. Not when the private index is (or will be) a
        # fresh seed of it: the first capture reads both from that one file, and a
        # capture asked meanwhile must not wait for a second parse (userindex.py).
        lent = private.lends_user_index()
        finish_loading = (lambda: False) if lent else user_index.start_refresh()
        private.preload()  # the first capture's index, loaded beside the walk too
        self._user_index_loading = True
        self._candidates = self._new_candidates()
        watcher = None
        try:
            watcher = fswatch.Watcher(
                str(self.ws.root), self._ignored_dir, self.scanner.root.list_directory, give_way
            )
        except OSError:
            pass
        finally:
            self._user_index_loading = False
            try:
                # Also when the setup gave way: the capture going first needs the index.
                finish_loading()  # raises as `refresh` does for an index libgit2 cannot read
            except BaseException:
                if watcher is not None:
                    watcher.close()
                raise
        if watcher is None:
            return False
        if lent:
            user_index.refresh()  # no capture came first: the skipped directories need it
        watcher.watch_again()
        self.watcher = watcher
        self._watched_with = (user_index.version, tuple(self._excluded()))
        self._last_full_scan = None  # what changed before the watch began is unknown
        return True

    def changes(self) -> set[str] | None:
        """Paths changed since the last capture, or None when only a full scan is sure."""
        if self.watcher is None:
            return None
        self._rules = rule_files_stamp(self.ws)
        changed = self.watcher.drain()
        if changed is None or self._last_full_scan is None:
            return None
        if time.monotonic() - self._last_full_scan > FULL_SCAN_INTERVAL:
            return None
        if self._rules != self._seen_rules or touches_ignore_files(changed):
            return None  # ignore rules changed: every untracked verdict may have changed
        return changed

    def captured(self, full_scan: bool) -> None:
        """After a capture that succeeded, taken as `changes` said."""
        if self.watcher is None:
            return
        if full_scan:
            self._last_full_scan = time.monotonic()
        self._seen_rules = self._rules  # a full scan checks the rules itself
        version = (self.scanner.user_index.version, tuple(self._excluded()))
        if full_scan or self._watched_with != version:
            # A directory skipped as ignored or excluded may count now: a rule changed
            # (every full scan may follow one), a file in it is tracked, or the settings
            # no longer exclude its name.
            self._watched_with = version
            if full_scan:
                self._candidates = self._new_candidates()
            self.watcher.watch_again()

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    def _new_candidates(self) -> IgnoreCandidates:
        try:
            ignore_case = self.ws.repo.config.get_bool("core.ignorecase")
        except (KeyError, pygit2.GitError, ValueError):
            ignore_case = False
        return IgnoreCandidates(self.ws.root, ignore_files(self.ws), ignore_case)

    def _ignored_dir(self, rel: str) -> bool:
        """Not watched: ignored or excluded (`node_modules`, by name), and no tracked file
        below (an ignored directory with a tracked file in it, `git add -f build/keep.txt`,
        changes like any other). An excluded one was watched: 3,500 folders of an
        unignored `node_modules` took 3,500 of the user's inotify watches, which every
        editor and daemon on the tree pays again."""
        if rel.rpartition("/")[2] in self._excluded():
            return self._user_index_loading or not self.scanner.user_index.tracks_dir(rel)
        if self._candidates is not None and not self._candidates.may_be_ignored(rel):
            return False  # no rule could match it: libgit2 need not be asked
        if not path_is_ignored(self.ws.repo, rel + "/"):
            return False
        return self._user_index_loading or not self.scanner.user_index.tracks_dir(rel)
