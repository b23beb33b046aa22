"""The engine: capture, undo, redo, list, diff and prune for one work tree.

It knows nothing of LSP or the command line; both fronts call these methods
with plain values and get plain JSON-ready dicts back. Every method that reads
or writes a timeline holds the repository lock, so servers and CLI processes
acting on one repository at once are serialised.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pygit2

from .config import Settings
from .core.durability import make_durable
from .core.gitpaths import path_is_ignored
from .core.locking import repository_lock
from .core.repository import WorkspaceRepo, open_workspace
from .core.treeops import changed_paths, entry_at
from .diff import turndiff
from .errors import (
    Cancelled,
    InvalidParams,
    NoOpenTurn,
    RequestFailed,
    RestoreFailed,
)
from .history import running
from .history.journal import Journal
from .history.timeline import (
    ACTIVE,
    MAX_SESSION_LENGTH,
    RECOVERY_KEPT,
    Timeline,
    TimelineStore,
    TurnRecord,
    now_rfc3339,
    signature,
)
from .hooks.hints import add_agent_hint
from .restore import rescue as rescued_versions
from .restore.plan import KeptFile, describe, roll_back
from .restore.undo_redo import RestoreOptions, Restorer
from .restore.workwriter import WorkWriter, sweep_staging
from .snapshot import fswatch
from .snapshot.members import WorkspaceScanner
from .snapshot.scanner import Progress, Snapshot

CancelCheck = Callable[[], bool]

#: Even with a watcher, a full scan runs at least this often: a safety net for changes
#: inotify cannot see (network file systems, writes through mmap).
FULL_SCAN_INTERVAL = 300.0


def check_session(session: Any) -> str | None:
    if session is None:
        return None
    if not isinstance(session, str) or not session.strip():
        raise InvalidParams("session", "must be a non-empty string")
    if len(session) > MAX_SESSION_LENGTH or "\0" in session:
        raise InvalidParams("session", f"must be at most {MAX_SESSION_LENGTH} characters, no NUL")
    return session


class Engine:
    """All turnback operations on one work tree; keep one per work tree to stay warm."""

    def __init__(self, folder: str, settings: Settings | None = None) -> None:
        self.ws: WorkspaceRepo = open_workspace(folder)
        self.settings = settings or Settings()
        self.store = TimelineStore(self.ws)
        self.journal = Journal(self.repo, self.ws.ref_prefix)
        #: Where restores write temporary files before renaming them into place.
        self.staging = self.ws.state_dir / "staging"
        self.watcher: fswatch.Watcher | None = None
        self._last_full_scan: float | None = None
        self._seen_exclude = self._exclude_stamp()
        self.recovered: list[str] = []
        #: The root's scanner and one per member repository (nested ones, submodules).
        self.scanner = WorkspaceScanner(self.ws)
        self.restorer = Restorer(self)
        self._lock = threading.RLock()

    @property
    def repo(self) -> pygit2.Repository:
        return self.ws.repo

    # ---- helpers -------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The repository lock and its member repositories' (so a session on one of them
        is serialised with this one), with any operation a crash interrupted recovered."""
        with ExitStack() as locks:
            for lock_path in self.scanner.lock_paths():  # the root's among them
                locks.enter_context(repository_lock(lock_path))
            self.recover()
            yield

    def locked(self) -> Any:
        """`_locked` for the engine's helper modules (running.py)."""
        return self._locked()

    def recover(self) -> None:
        """Finishes or rolls back a restore a crash interrupted (the journal says which)."""
        intent = self.journal.pending()
        if intent is None:
            sweep_staging(self.staging)  # renames a power loss undid
            return
        writer = self.writer(intent.id)
        writer.sweep(list(intent.writes))  # temporary files of the write the crash cut short
        if self.store.ref_target(intent.session) == intent.timeline_after:
            self.journal.end()  # the files were all written before the commit point
            self.recovered.append(
                f"turnback finished an interrupted {intent.operation} in session "
                f"'{intent.session}'."
            )
            return
        saved = self.tree(intent.saved)
        undone = roll_back(writer, intent.writes, saved)
        if undone.failed is not None:
            path, cause = undone.failed
            raise RestoreFailed(
                f"turnback could not roll back an interrupted {intent.operation}: "
                f"{describe(cause)} on {path}; it will retry. The state before it is "
                f"commit {intent.saved}.",
                path=path,
                rolledBack=False,
                saved=intent.saved,
                kept=undone.kept,
            )
        make_durable(writer.touched)
        if undone.kept:
            self._keep_reachable(intent.session, intent.saved, undone.kept)
        self.journal.end()
        n = len(undone.restored)
        message = (
            f"turnback rolled back an interrupted {intent.operation} in session "
            f"'{intent.session}': {n} file{'s' if n != 1 else ''} put back as before it."
        )
        if undone.kept:
            message += (
                f" Changed since and left as they are (yours): {', '.join(undone.kept)}."
                f" The state before the {intent.operation} is commit {intent.saved}."
            )
        self.recovered.append(message)

    def _keep_reachable(self, session: str, saved: str, kept: list[str]) -> None:
        """Keeps the state an interrupted restore replaced among the session's rescued
        versions: at a path the user changed since, it may be the only copy left."""
        timeline = self.store.load(session)
        if timeline is not None and timeline.find_rescued(saved) is None:
            timeline.add_rescued(saved, RECOVERY_KEPT, kept)
            self.store.commit(session, self.store.prepare(timeline))

    def writer(self, journal_id: str) -> WorkWriter:
        """Writes into the work tree for the restore `journal_id` names."""
        return WorkWriter(self.ws.root, self.repo, self.staging, journal_id[:16])

    def take_recovered(self) -> list[str]:
        """Messages about interrupted operations recovered since the last call."""
        messages, self.recovered = self.recovered, []
        return messages

    def resolve_session(self, session: str | None) -> str:
        return check_session(session) or self.store.default_session()

    def tree(self, commit_hex: str | None) -> pygit2.Tree | None:
        if commit_hex is None:
            return None
        return self.repo[pygit2.Oid(hex=commit_hex)].tree  # type: ignore[union-attr]

    def snapshot_commit(self, snap: Snapshot, message: str) -> str:
        head = self.ws.head_commit()
        sig = signature()
        oid = self.repo.create_commit(
            None, sig, sig, message, snap.tree, [head] if head is not None else []
        )
        return str(oid)

    def capture_now(self, progress: Progress | None, cancelled: CancelCheck | None) -> Snapshot:
        with self._lock:
            changed = self._watched_changes()
            snap = self.scanner.capture(self.settings, progress, cancelled, changed)
            if changed is None:
                self._last_full_scan = time.monotonic()
            return snap

    def warm_up(self) -> None:
        """A full scan now, under the lock, so the next capture takes the watcher path.

        Writes no turn: a daemon does it once it watches, before any hook asks.
        """
        with self._locked():
            self.capture_now(None, None)

    # ---- the watcher -----------------------------------------------------------------------

    def enable_watcher(self) -> bool:
        """Watches the work tree so captures look only at changed paths (long-lived servers)."""
        if not fswatch.available():
            return False
        with self._lock:
            try:
                self.watcher = fswatch.Watcher(str(self.ws.root), self._ignored_dir)
            except OSError:
                return False
            self._last_full_scan = None  # what changed before the watch began is unknown
        return True

    def _ignored_dir(self, rel: str) -> bool:
        return path_is_ignored(self.repo, rel + "/")

    def _exclude_stamp(self) -> float | None:
        try:
            return (self.ws.lock_path.parent.parent / "info" / "exclude").stat().st_mtime
        except OSError:
            return None

    def _watched_changes(self) -> set[str] | None:
        """Paths changed since the last capture, or None when only a full scan is sure."""
        if self.watcher is None:
            return None
        changed = self.watcher.drain()
        exclude = self._exclude_stamp()
        if changed is None or self._last_full_scan is None:
            return None
        if time.monotonic() - self._last_full_scan > FULL_SCAN_INTERVAL:
            return None
        if exclude != self._seen_exclude or any(
            p.rpartition("/")[2] == ".gitignore" for p in changed
        ):
            self._seen_exclude = exclude
            return None  # ignore rules changed: every untracked verdict may have changed
        return changed

    def close(self) -> None:
        """Saves the scan cache for the next process and stops watching."""
        with self._lock:
            self.scanner.flush()
            if self.watcher is not None:
                self.watcher.close()
                self.watcher = None

    def capture_paths(self, base: pygit2.Tree | None, paths: set[str]) -> Snapshot:
        with self._lock:
            return self.scanner.capture_paths(self.settings, base, paths)

    def end_tree(self, timeline: Timeline, turn: TurnRecord) -> pygit2.Tree | None:
        """The state a turn left: its "after" capture, the next turn's snapshot, or None (now)."""
        if turn.after:
            return self.tree(turn.after)
        following = timeline.next_after(turn)
        if following is not None:
            return self.tree(following.before)
        if turn.replaced:
            return self.tree(turn.replaced)
        return None

    def turn_changes(self, timeline: Timeline, turn: TurnRecord, now: pygit2.Tree) -> set[str]:
        end = self.end_tree(timeline, turn)
        return changed_paths(self.repo, self.tree(turn.before), end if end is not None else now)

    def left_out(
        self,
        timeline: Timeline,
        oldest: TurnRecord,
        newest: TurnRecord,
        now: Snapshot | None,
    ) -> list[KeptFile]:
        """What the turns' captures left out that was not left out before them (a file too
        large, an excluded directory, a FIFO they made): an undo keeps these, and says so."""
        following = timeline.next_after(newest)
        if now is not None:
            end = [s.to_json() for s in now.skipped]
        elif newest.after_skipped is not None:
            end = newest.after_skipped
        elif following is not None:
            end = following.skipped
        else:
            return []
        before = {(s["path"], s["reason"]) for s in oldest.skipped}
        return [
            KeptFile(s["path"], s["reason"])
            for s in end
            if (s["path"], s["reason"]) not in before and os.path.lexists(self.ws.root / s["path"])
        ]

    def turn_json(self, timeline: Timeline, turn: TurnRecord) -> dict[str, Any]:
        return turn.to_json(timeline.session)

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
    ) -> dict[str, Any]:
        if phase not in ("before", "after"):
            raise InvalidParams("phase", 'must be "before" or "after"')
        if label is not None and not isinstance(label, str):
            raise InvalidParams("label", "must be a string")
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, (int, str))):
            raise InvalidParams("turn", "must be a turn number or a turn id")
        with self._locked():
            name = self.resolve_session(session)
            timeline = self.store.load(name) or Timeline(session=name)
            if phase == "after" and not timeline.active:
                raise NoOpenTurn(name)
            if phase == "after" and turn is not None:
                # Seal only the turn the caller opened (a hook), never an older one that
                # became the newest because that turn was undone meanwhile.
                newest = timeline.active[-1]
                if turn not in (newest.turn, newest.id, newest.before):
                    raise NoOpenTurn(name)
            snap = self.capture_now(progress, cancelled)
            if cancelled is not None and cancelled():
                raise Cancelled()
            stamp = now_rfc3339()
            if phase == "after":
                turn = timeline.active[-1]
                turn.after = self.snapshot_commit(snap, f"turnback: after turn {turn.turn}\n")
                turn.after_skipped = [s.to_json() for s in snap.skipped]
                turn.after_repositories = self.scanner.states()
                turn.sealed_at = stamp
                if metadata is not None:
                    turn.metadata = metadata
            else:
                number = timeline.next_turn
                commit = self.snapshot_commit(
                    snap, f"turnback: before turn {number} of session {name}\n\n{label or ''}\n"
                )
                # A new turn forks the timeline: the redo stack is gone.
                timeline.turns = [t for t in timeline.turns if t.state == ACTIVE]
                turn = TurnRecord(
                    turn=number,
                    id=commit[:16],
                    label=label if label is not None else f"Turn {number}",
                    created_at=stamp,
                    before=commit,
                    metadata=metadata,
                    skipped=[s.to_json() for s in snap.skipped],
                    head=str(self.ws.head_commit()) if self.ws.head_commit() else None,
                    head_ref=self.ws.head_name(),
                    repositories=self.scanner.states(),
                )
                timeline.turns.append(turn)
                timeline.next_turn = number + 1
                timeline.last_capture_at = stamp
                keep = self.settings.turns_per_session
                if len(timeline.turns) > keep:
                    timeline.turns = timeline.turns[-keep:]
            self.store.save(timeline)
            return self.turn_json(timeline, turn)

    # ---- undo / redo ---------------------------------------------------------------------

    def undo(
        self,
        session: str | None = None,
        options: RestoreOptions | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        options = options or RestoreOptions()
        with self._locked():
            name = self.resolve_session(session)
            running.guard_undo(self, name, options)  # never lands mid-turn of a running agent
            result = self.restorer.undo(name, options, progress)
        return add_agent_hint(result)  # how to roll the agent's conversation back too

    def redo(
        self,
        session: str | None = None,
        options: RestoreOptions | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        options = options or RestoreOptions()
        with self._locked():
            name = self.resolve_session(session)
            running.guard_redo(self, name, options)
            return self.restorer.redo(name, options)

    def rescue(
        self,
        session: str | None,
        version_id: Any,
        paths: Any = None,
        options: RestoreOptions | None = None,
    ) -> dict[str, Any]:
        """Puts back the files of a rescued version (what a forced restore overwrote).

        Without a session, the version is looked for in every session: its id is unique.
        """
        request = rescued_versions.check_request(version_id, paths)
        with self._locked():
            name = check_session(session) or rescued_versions.session_holding(
                self.store.all(), request.version_id
            )
            return rescued_versions.rescue(
                self, name or self.resolve_session(None), request, options or RestoreOptions()
            )

    def file_baseline(
        self, session: str | None, path: str
    ) -> tuple[dict[str, Any], bytes | None] | None:
        """The newest active turn and its snapshot of `path`, if that turn changed the file."""
        with self._locked():
            timeline = self.store.load(self.resolve_session(session))
            if timeline is None or not timeline.active:
                return None
            turn = timeline.active[-1]
            start = entry_at(self.tree(turn.before), path)
            end = self.end_tree(timeline, turn)
            if end is not None and entry_at(end, path) == start:
                return None
            data = self.repo[pygit2.Oid(hex=start.oid)].data if start else None
            return self.turn_json(timeline, turn), data

    def sessions_state(self) -> dict[str, str]:
        """Session → last update time, to notice changes made by any process."""
        with self._locked():
            return {t.session: t.updated_at for t in self.store.all()}

    # ---- list / diff / prune -------------------------------------------------------------

    def list(
        self, session: str | None = None, limit: int | None = None, include_files: bool = False
    ) -> dict[str, Any]:
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise InvalidParams("limit", "must be an integer >= 1")
        with self._locked():
            return self._list(session, limit, include_files)

    def _list(
        self, session: str | None, limit: int | None, include_files: bool = False
    ) -> dict[str, Any]:
        name = self.resolve_session(session)
        timelines = self.store.all()
        timeline = next((t for t in timelines if t.session == name), None)
        turns = list(reversed(timeline.turns)) if timeline else []
        if limit is not None:
            turns = turns[:limit]
        listed = [self.turn_json(timeline, t) for t in turns] if timeline else []
        if include_files and timeline:
            now: pygit2.Tree | None = None
            for item, record in zip(listed, turns, strict=True):
                end = self.end_tree(timeline, record)
                if end is None:  # the newest turn, unsealed: compare with the work tree now
                    now = now or self.repo[self.capture_now(None, None).tree]
                    end = now
                item["files"] = turndiff.changed_files(self.repo, self.tree(record.before), end)
        return {
            "session": name,
            "workTree": self.ws.root.as_uri(),
            "turns": listed,
            "running": running.annotate_list(self, timeline, listed),
            "canUndo": bool(timeline and timeline.active),
            "canRedo": bool(timeline and timeline.undone),
            "rescued": [r.to_json() for r in reversed(timeline.rescued)] if timeline else [],
            "sessions": [
                {"id": t.session, "turns": len(t.turns), "updatedAt": t.updated_at}
                for t in sorted(timelines, key=lambda t: t.updated_at, reverse=True)
            ],
        }

    def find_turn(self, timeline: Timeline | None, turn: Any) -> TurnRecord:
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, (int, str))):
            raise InvalidParams("turn", "must be a turn number or a turn id")
        if timeline is None or not timeline.turns:
            raise InvalidParams("turn", "the session has no turns")
        if turn is None:
            if not timeline.active:
                raise InvalidParams("turn", "the session has no active turn; name one")
            return timeline.active[-1]
        for record in timeline.turns:
            if record.turn == turn or record.id == turn or record.before == turn:
                return record
        raise InvalidParams("turn", f"no turn {turn!r} in session '{timeline.session}'")

    def diff(
        self,
        session: str | None = None,
        turn: Any = None,
        path: str | None = None,
        context: int = 3,
    ) -> dict[str, Any]:
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= 1000:
            raise InvalidParams("context", "must be an integer from 0 to 1000")
        rel = turndiff.relative_path(self.ws.root, path) if path is not None else None
        with self._locked():
            return self._diff(session, turn, rel, context)

    def _diff(
        self, session: str | None, turn: Any, rel: str | None, context: int
    ) -> dict[str, Any]:
        name = self.resolve_session(session)
        timeline = self.store.load(name)
        record = self.find_turn(timeline, turn)
        old, new = self.turn_trees(timeline, record)  # type: ignore[arg-type]
        files = turndiff.diff_trees(self.repo, old, new, rel, context)
        return {
            "turn": self.turn_json(timeline, record),  # type: ignore[arg-type]
            "workTree": self.ws.root.as_uri(),
            "files": files,
        }

    def file_content(self, session: str | None, turn: Any, path: Any, side: str) -> dict[str, Any]:
        """A file as a turn found it ("before") or left it ("after"), for diff views."""
        rel = turndiff.relative_path(self.ws.root, path)
        with self._locked():
            timeline = self.store.load(self.resolve_session(session))
            record = self.find_turn(timeline, turn)
            old, new = self.turn_trees(timeline, record)  # type: ignore[arg-type]
            content = turndiff.file_content(self.repo, old if side == "before" else new, rel)
            return {
                "path": rel,
                "side": side,
                "turn": record.id,
                "workTree": self.ws.root.as_uri(),
                **content,
            }

    def turn_trees(self, timeline: Timeline, record: TurnRecord) -> tuple[pygit2.Tree, pygit2.Tree]:
        """The trees a turn's diff runs between; "now" is a fresh capture of the work tree."""
        end = self.end_tree(timeline, record)
        if end is None:
            end = self.repo[self.capture_now(None, None).tree]
        return self.tree(record.before), end  # type: ignore[return-value]

    def prune(
        self,
        session: str | None = None,
        keep: int | None = None,
        older_than: str | None = None,
        rescued: bool = False,
    ) -> dict[str, Any]:
        """Drops old turns; rescued versions too (by the same rules) only when `rescued`."""
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
            raise InvalidParams("keep", "must be an integer >= 0")
        if not isinstance(rescued, bool):
            raise InvalidParams("rescued", "must be true or false")
        cutoff = _parse_age(older_than) if older_than is not None else None
        if keep is None and cutoff is None:
            raise InvalidParams("keep", "give keep, olderThan or both")
        removed_turns: list[dict[str, Any]] = []
        removed_rescued: list[dict[str, Any]] = []
        removed_sessions: list[str] = []
        with self._locked():
            targets = self.store.all()
            if session is not None:
                targets = [t for t in targets if t.session == check_session(session)]
            for timeline in targets:
                survivors = _newest(timeline.turns, keep, cutoff)
                # The redo stack and every turn its undo batches span stay: redo needs them.
                needed = {
                    n for t in timeline.undone for n in range((t.batch or [t.turn])[0], t.turn + 1)
                }
                survivors = [t for t in timeline.turns if t in survivors or t.turn in needed]
                gone = [t for t in timeline.turns if t not in survivors]
                kept_rescued = _newest(timeline.rescued, keep, cutoff) if rescued else None
                gone_rescued = [r for r in timeline.rescued if r not in (kept_rescued or [])]
                if not gone and not (rescued and gone_rescued):
                    continue
                removed_turns += [
                    {"session": timeline.session, "turn": t.turn, "id": t.id} for t in gone
                ]
                timeline.turns = survivors
                if kept_rescued is not None:
                    removed_rescued += [
                        {"session": timeline.session, "id": r.id} for r in gone_rescued
                    ]
                    timeline.rescued = kept_rescued
                if survivors or timeline.rescued:
                    self.store.save(timeline)
                else:
                    self.store.delete(timeline.session)
                    removed_sessions.append(timeline.session)
        message = f"Removed {len(removed_turns)} turns"
        if rescued:
            message += f", {len(removed_rescued)} rescued versions"
        return {
            "removedTurns": removed_turns,
            "removedRescued": removed_rescued,
            "removedSessions": removed_sessions,
            "message": f"{message} and {len(removed_sessions)} sessions",
        }


def _newest(items: list[Any], keep: int | None, cutoff: str | None) -> list[Any]:
    """The newest `keep` of `items` (oldest first, each with `created_at`) not before `cutoff`."""
    survivors = items
    if keep is not None:
        survivors = survivors[-keep:] if keep else []
    if cutoff is not None:
        survivors = [item for item in survivors if item.created_at >= cutoff]
    return survivors


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _parse_age(value: Any) -> str:
    """ "7d", "12h", "30m", "45s", "2w" or an RFC 3339 time → an RFC 3339 cutoff."""
    if not isinstance(value, str) or not value:
        raise InvalidParams("olderThan", 'must be a duration like "7d" or an RFC 3339 time')
    if value[-1] in _UNITS and value[:-1].isdigit():
        try:
            span = timedelta(seconds=int(value[:-1]) * _UNITS[value[-1]])
            moment = datetime.now(timezone.utc) - span
        except OverflowError:
            raise InvalidParams("olderThan", "is too far in the past") from None
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParams(
            "olderThan", 'must be a duration like "7d" or an RFC 3339 time'
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["Engine", "RestoreOptions", "RequestFailed"]
