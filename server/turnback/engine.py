"""The engine: capture, undo, redo, list, diff and prune for one work tree.

It knows nothing of LSP or the command line; both fronts call these methods
with plain values and get the dataclasses of results.py back (wire.py makes
protocol.md's JSON of them). Every method that reads or writes a timeline holds
the repository lock, so servers and CLI processes acting on one repository at
once are serialised. Its parts below (restore/, history/) get a `Context` of the
few collaborators they need, never the engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pygit2

from .config import Settings
from .core.locking import repository_lock
from .core.pygit2_internals import NOT_FOUND, STRICT_UTF8_PATHS
from .core.repository import WorkspaceRepo, open_workspace
from .core.treeops import entry_at
from .diff import turndiff
from .errors import (
    Cancelled,
    InvalidParams,
    NoOpenTurn,
    NoWorkspace,
    ObjectMissing,
    RequestFailed,
    UnsupportedRepository,
)
from .history import neighbours, running
from .history.context import CancelCheck, Context, RestoreOptions
from .history.journal import Journal
from .history.metadata import check_metadata
from .history.prune import parse_age
from .history.prune import prune as prune_timelines
from .history.recording import open_turn, seal_turn
from .history.timeline import (
    MAX_ENCODED_SESSION,
    MAX_SESSION_LENGTH,
    DamagedTimeline,
    Timeline,
    TimelineStore,
    TurnRecord,
    encode_session,
    now_rfc3339,
)
from .history.worktrees import claim_refs
from .hooks.hints import add_agent_hint
from .restore import recovery
from .restore import rescue as rescued_versions
from .restore.undo_redo import Restorer
from .results import (
    DiffResult,
    FileContent,
    ListResult,
    PruneResult,
    RescueResult,
    RestoreResult,
    SessionInfo,
    Turn,
)
from .snapshot import fswatch
from .snapshot.captured import Progress, Snapshot
from .snapshot.members import WorkspaceScanner
from .snapshot.treewatch import TreeWatch
from .snapshot.unpacking import Unpacking
from .snapshot.watchsetup import WatchSetup


def check_session(session: Any) -> str | None:
    if session is None:
        return None
    if not isinstance(session, str) or not session.strip():
        raise InvalidParams(
            "session", "must be a string that is neither empty nor only white space"
        )
    if len(session) > MAX_SESSION_LENGTH or "\0" in session:
        raise InvalidParams("session", f"must be at most {MAX_SESSION_LENGTH} characters, no NUL")
    if len(encode_session(session)) > MAX_ENCODED_SESSION:
        # A ref's file name: 255 bytes at most, with room for git's ".lock".
        raise InvalidParams(
            "session",
            f"is too long once stored ({len(encode_session(session))} bytes of "
            f"{MAX_ENCODED_SESSION}: each character but A-Z, a-z, 0-9, _ and - takes 3 per "
            "UTF-8 byte)",
        )
    return session


def _check_capture(phase: Any, label: Any, turn: Any, metadata: Any = None) -> None:
    if metadata is not None:
        check_metadata(metadata)
    if phase not in ("before", "after"):
        raise InvalidParams("phase", 'must be "before" or "after"')
    if label is not None and not isinstance(label, str):
        raise InvalidParams("label", "must be a string")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, (int, str))):
        raise InvalidParams("turn", "must be a turn number or a turn id")


class Engine:
    """All turnback operations on one work tree; keep one per work tree to stay warm."""

    def __init__(self, folder: str, settings: Settings | None = None) -> None:
        self.ws: WorkspaceRepo = open_workspace(folder)
        self.store = TimelineStore(self.ws)
        self.journal = Journal(self.repo, self.ws.ref_prefix)
        #: A long-lived process's watch of the work tree (`enable_watcher`), and its
        #: setup on a thread of its own (`start_watching`).
        self._watch: TreeWatch | None = None
        self._watch_setup = WatchSetup(self.enable_watcher)
        #: The root's scanner and one per member repository (nested ones, submodules).
        self.scanner = WorkspaceScanner(self.ws)
        self._lock = threading.RLock()
        self.ctx = Context(
            ws=self.ws,
            store=self.store,
            journal=self.journal,
            settings=settings or Settings(),
            capture_now=self.capture_now,
            capture_paths=self.capture_paths,
            locked=self.locked,
            scanner=self.scanner,
        )
        self.restorer = Restorer(self.ctx)
        self.unpacking = Unpacking(self.scanner)
        #: Whether this worktree's refs were claimed from a removed namesake (worktrees.py).
        self._worktree_claimed = False

    @property
    def repo(self) -> pygit2.Repository:
        return self.ws.repo

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.ctx.settings = settings

    # ---- helpers -------------------------------------------------------------------------

    @contextmanager
    def _locked(self, cancelled: CancelCheck | None = None) -> Iterator[None]:
        """The repository lock and its member repositories' (so a session on one of them
        is serialised with this one), with any operation a crash interrupted recovered.
        An object missing from the repository is a clear refusal, not an internal error: a
        restore maps one it meets while writing to `RestoreFailed` after rolling back, so
        whatever reaches here was met before anything was written."""
        self._check_still_there()
        with ExitStack() as locks:
            for lock_path in self.scanner.lock_paths():  # the root's among them
                locks.enter_context(repository_lock(lock_path, cancelled=cancelled))
            self.scanner.release_deleted_packs()
            if not self._worktree_claimed:
                if claim_refs(self.ws):
                    self.ctx.recovered.append(
                        "Set aside the turns of an earlier worktree of this name"
                    )
                self._worktree_claimed = True
            recovery.recover(self.ctx)
            try:
                yield
            except UnicodeEncodeError as error:
                if "surrogates" not in str(error) or not STRICT_UTF8_PATHS:
                    raise
                raise UnsupportedRepository(  # pygit2 1.18 takes paths as strict UTF-8
                    "A file name here is not valid UTF-8, which pygit2 1.18 (the last release "
                    "for Python 3.10) cannot handle: run turnback on Python 3.11 or later."
                ) from None
            except KeyError as error:  # pygit2's NotFoundError is one, `repo[oid]` raises one
                missing = isinstance(error, NOT_FOUND)
                if not missing and not ObjectMissing.names_an_object(error):
                    raise
                raise ObjectMissing.from_not_found(error) from error
            finally:
                for scanner in self.scanner.scanners():  # each repository's, members' too
                    scanner.ws.settle_permissions()
                    scanner.release_cache_write()

    def _check_still_there(self) -> None:
        """The workspace folder (and its repository) deleted under a long-lived engine: say
        so, rather than recreate `.git/turnback` in a folder the user removed, or call the
        objects it lost missing."""
        git_dir = None if self.ws.shadow else Path(self.ws.repo.path)
        if not self.ws.root.is_dir() or (git_dir is not None and not git_dir.is_dir()):
            raise NoWorkspace(
                f"The workspace folder {self.ws.root} (or its repository) no longer exists; "
                "nothing was changed."
            )

    def locked(self) -> AbstractContextManager[None]:
        """`_locked` for the engine's parts (history/running.py, through the Context)."""
        return self._locked()

    def take_recovered(self) -> list[str]:
        """Messages about interrupted operations recovered since the last call."""
        messages, self.ctx.recovered = self.ctx.recovered, []
        return messages

    def resolve_session(self, session: str | None) -> str:
        return check_session(session) or self.store.default_session()

    def tree(self, commit_hex: str | None) -> pygit2.Tree | None:
        return self.ctx.tree(commit_hex)

    def snapshot_commit(self, snap: Snapshot, message: str) -> str:
        return self.ctx.snapshot_commit(snap, message)

    def find_turn(self, timeline: Timeline | None, turn: Any) -> TurnRecord:
        return self.ctx.find_turn(timeline, turn)

    def capture_now(self, progress: Progress | None, cancelled: CancelCheck | None) -> Snapshot:
        with self._lock:
            changed = self._watch.changes() if self._watch is not None else None
            snap = self.scanner.capture(self.settings, progress, cancelled, changed)
            if self._watch is not None:
                self._watch.captured(full_scan=changed is None)
            return snap

    def capture_paths(self, base: pygit2.Tree | None, paths: set[str]) -> Snapshot:
        with self._lock:
            return self.scanner.capture_paths(self.settings, base, paths)

    def warm_up(self) -> None:
        """A full scan now, under the lock, so the next capture takes the watcher path.

        Writes no turn: a daemon does it once it watches, before any hook asks.
        """
        self._watch_setup.wait()
        with self._locked():
            self.capture_now(None, None)

    # ---- the watcher -----------------------------------------------------------------------

    def start_watching(self) -> None:
        """`enable_watcher` on a thread of its own, for servers: no request waits for it,
        and a capture asked meanwhile goes first (snapshot/watchsetup.py)."""
        self._watch_setup.start()

    def enable_watcher(self, give_way: Callable[[], bool] | None = None) -> bool:
        """Watches the work tree so captures look only at changed paths (long-lived servers).

        Raises `fswatch.GaveWay` as soon as `give_way`, asked before each directory, says so.
        """
        with self._lock:
            watch = TreeWatch(self.ws, self.scanner, lambda: self.settings.excluded_directories)
            if not watch.start(give_way):
                return False
            if self._watch is not None:
                self._watch.close()
            self._watch = watch
        return True

    @property
    def watcher(self) -> fswatch.Watcher | None:
        """The inotify watcher, while one watches."""
        return self._watch.watcher if self._watch is not None else None

    def close(self) -> None:
        """Saves the scan cache for the next process and stops watching."""
        self._watch_setup.close()
        self.unpacking.wait()
        with self._lock:
            self.scanner.flush()
            if self._watch is not None:
                self._watch.close()
                self._watch = None

    def settle(self) -> None:
        """Until what the last operation left running once it answered is done (the stat
        caches' writes, unpacking): a measurement that follows must not share the machine
        with it (bench/run.py)."""
        self.unpacking.wait()
        with self._lock:
            for scanner in self.scanner.scanners():
                scanner.settle_cache_write()

    # ---- capture -------------------------------------------------------------------------

    def capture(
        self,
        session: str | None = None,
        label: str | None = None,
        phase: str = "before",
        metadata: Any = None,
        progress: Progress | None = None,
        cancelled: CancelCheck | None = None,
        turn: int | str | None = None,
    ) -> Turn:
        """A new turn ("before"), or the newest active turn sealed ("after")."""
        _check_capture(phase, label, turn, metadata)
        with self._watch_setup.capture(), self._locked(cancelled):
            name = self.resolve_session(session)
            timeline = self._timeline_to_capture_into(name)
            if phase == "after" and not timeline.active:
                raise NoOpenTurn(name)
            if phase == "after" and timeline.undone:
                # The late "after" of a turn the user undid: sealing the older turn in its
                # place took the user's edits since into it, for its undo to delete; so
                # did one naming that older turn (sealed long before: sealed again).
                raise NoOpenTurn(name, undone_turn=timeline.undone[-1].turn)
            if phase == "after" and turn is not None:
                # Seal only the turn the caller opened (a hook), never an older one that
                # became the newest because that turn was undone meanwhile.
                newest = timeline.active[-1]
                if turn not in (newest.turn, newest.id, newest.before):
                    known = any(turn in (t.turn, t.id, t.before) for t in timeline.turns)
                    raise NoOpenTurn(name, not_newest=turn, exists=known)
            snap = self.capture_now(progress, cancelled)
            if cancelled is not None and cancelled():
                raise Cancelled()
            stamp = now_rfc3339()
            if phase == "after":
                record = seal_turn(self.ctx, timeline, snap, metadata, stamp)
            else:
                record = open_turn(self.ctx, timeline, snap, label, metadata, stamp)
            self.store.save(timeline, "capture")
        self.unpacking.start_if_due()  # its objects written loose once it has answered
        return record.to_result(timeline.session)

    def _timeline_to_capture_into(self, name: str) -> Timeline:
        """The session's timeline; a damaged one is set aside (never deleted), so that a
        hook's captures are not refused for good, and the session starts over."""
        try:
            return self.store.load(name) or Timeline(session=name)
        except DamagedTimeline as damaged:
            where = self.store.set_aside(name)
            self.ctx.recovered.append(
                f"The timeline of session '{name}' could not be read ({damaged.cause}); it "
                f"was set aside ({where}), and the session starts over."
            )
            return Timeline(session=name)

    # ---- undo / redo ---------------------------------------------------------------------

    def undo(
        self,
        session: str | None = None,
        options: RestoreOptions | None = None,
        progress: Progress | None = None,
    ) -> RestoreResult:
        options = options or RestoreOptions()
        with self._locked():
            name = self.resolve_session(session)
            running.guard_undo(self.ctx, name, options)  # never lands mid-turn of a running agent
            neighbours.guard_neighbours(self.ctx, "undo", options)  # nor of one next door
            result = self.restorer.undo(name, options, progress)
        return add_agent_hint(result)  # how to roll the agent's conversation back too

    def redo(
        self,
        session: str | None = None,
        options: RestoreOptions | None = None,
        progress: Progress | None = None,
    ) -> RestoreResult:
        options = options or RestoreOptions()
        with self._locked():
            name = self.resolve_session(session)
            running.guard_redo(self.ctx, name, options)
            neighbours.guard_neighbours(self.ctx, "redo", options)
            return self.restorer.redo(name, options)

    def rescue(
        self,
        session: str | None,
        version_id: Any,
        paths: Any = None,
        options: RestoreOptions | None = None,
    ) -> RescueResult:
        """Puts back the files of a rescued version (what a forced restore overwrote).

        Without a session, the version is looked for in every session: its id is unique.
        """
        request = rescued_versions.check_request(version_id, paths)
        with self._locked():
            name = check_session(session) or rescued_versions.session_holding(
                self.store.all(), request.version_id
            )
            if name is None:
                raise InvalidParams(
                    "id", f"no rescued version {request.version_id!r} in any session here"
                )
            return rescued_versions.rescue(
                self.restorer, name, request, options or RestoreOptions()
            )

    def file_baseline(self, session: str | None, path: str) -> tuple[Turn, bytes | None] | None:
        """The newest active turn and its snapshot of `path`, if that turn changed the file."""
        with self._locked():
            timeline = self.store.load(self.resolve_session(session))
            if timeline is None or not timeline.active:
                return None
            turn = timeline.active[-1]
            before = self.tree(turn.before)
            start = entry_at(before, path)
            end = self.ctx.end_tree(timeline, turn)
            if end is not None and entry_at(end, path) == start:
                return None
            if start is None and end is not None:
                start = turndiff.renamed_from(
                    self.repo, before, end, path
                )  # else: all of it "added"
            if start is None and end is None and self._never_captured(path):
                return None  # a turn still open did not make what no snapshot would hold
            data = self.repo[pygit2.Oid(hex=start.oid)].data if start else None
            return turn.to_result(timeline.session), data

    def _never_captured(self, path: str) -> bool:
        """A path no capture holds: inside a `.git`, or ignored and untracked."""
        return ".git" in path.split("/") or self.scanner.ignored_untracked(path)

    def sessions_state(self) -> dict[str, str]:
        """Session → last update time, to notice changes made by any process."""
        with self._locked():
            return {h["session"]: h.get("updatedAt", "") for h in self.store.headers()}

    # ---- list / diff / prune -------------------------------------------------------------

    def list(
        self, session: str | None = None, limit: int | None = None, include_files: bool = False
    ) -> ListResult:
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise InvalidParams("limit", "must be an integer >= 1")
        with self._locked():
            return self._list(session, limit, include_files)

    def _list(
        self, session: str | None, limit: int | None, include_files: bool = False
    ) -> ListResult:
        name = self.resolve_session(session)
        timeline = self.store.load(name)  # none, or damaged: said plainly
        turns = list(reversed(timeline.turns)) if timeline else []
        if limit is not None:
            turns = turns[:limit]
        listed = [t.to_result(timeline.session) for t in turns] if timeline else []
        if include_files and timeline:
            now: pygit2.Tree | None = None
            for item, record in zip(listed, turns, strict=True):
                end = self.ctx.end_tree(timeline, record)
                if end is None:  # the newest turn, unsealed: compare with the work tree now
                    now = now or self.repo[self.capture_now(None, None).tree]
                    end = now
                item.files = turndiff.changed_files(self.repo, self.tree(record.before), end)
        running_here, elsewhere = running.annotate_list(self.ctx, timeline, listed)
        return ListResult(
            session=name,
            work_tree=self.ws.root,
            turns=listed,
            running=running_here,
            running_elsewhere=elsewhere,
            can_undo=bool(timeline and timeline.active),
            can_redo=bool(timeline and timeline.undone),
            rescued=[r.to_result() for r in reversed(timeline.rescued)] if timeline else [],
            sessions=[
                SessionInfo(*summary)
                for summary in sorted(self.store.summaries(), key=lambda s: s[2], reverse=True)
            ],
        )

    def diff(
        self,
        session: str | None = None,
        turn: Any = None,
        path: str | None = None,
        context: int = 3,
    ) -> DiffResult:
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= 1000:
            raise InvalidParams("context", "must be an integer from 0 to 1000")
        rel = turndiff.relative_path(self.ws.root, path) if path is not None else None
        with self._locked():
            return self._diff(session, turn, rel, context)

    def _diff(self, session: str | None, turn: Any, rel: str | None, context: int) -> DiffResult:
        name = self.resolve_session(session)
        timeline = self.store.load(name)
        record = self.find_turn(timeline, turn)
        old, new = self.turn_trees(timeline, record)  # type: ignore[arg-type]
        files = turndiff.diff_trees(self.repo, old, new, rel, context)
        return DiffResult(record.to_result(name), self.ws.root, files)

    def file_content(self, session: str | None, turn: Any, path: Any, side: str) -> FileContent:
        """A file as a turn found it ("before") or left it ("after"), for diff views."""
        rel = turndiff.relative_path(self.ws.root, path)
        if not rel:  # "." or the work tree's own path: a folder, which has no content
            raise InvalidParams("path", "names the work tree's folder, not a file")
        with self._locked():
            timeline = self.store.load(self.resolve_session(session))
            record = self.find_turn(timeline, turn)
            old, new = self.turn_trees(timeline, record)  # type: ignore[arg-type]
            empty = FileContent(rel, side, record.id, self.ws.root, False, False, "")
            return turndiff.file_content(self.repo, old if side == "before" else new, empty)

    def turn_trees(self, timeline: Timeline, record: TurnRecord) -> tuple[pygit2.Tree, pygit2.Tree]:
        """The trees a turn's diff runs between; "now" is a fresh capture of the work tree."""
        end = self.ctx.end_tree(timeline, record)
        if end is None:
            end = self.repo[self.capture_now(None, None).tree]
        return self.tree(record.before), end  # type: ignore[return-value]

    def prune(
        self,
        session: str | None = None,
        keep: int | None = None,
        older_than: str | None = None,
        rescued: bool = False,
    ) -> PruneResult:
        """Drops old turns; rescued versions too (by the same rules) only when `rescued`."""
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
            raise InvalidParams("keep", "must be an integer >= 0")
        if not isinstance(rescued, bool):
            raise InvalidParams("rescued", "must be true or false")
        cutoff = parse_age(older_than) if older_than is not None else None
        if keep is None and cutoff is None:
            raise InvalidParams("keep", "give keep, olderThan or both")
        name = check_session(session) if session is not None else None  # even with no sessions
        with self._locked():
            targets = self.store.all()
            if name is not None:
                targets = [t for t in targets if t.session == name]
            return prune_timelines(self.store, targets, keep, cutoff, rescued)


__all__ = ["Engine", "RestoreOptions", "RequestFailed"]
