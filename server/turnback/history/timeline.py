"""A session's turns, kept in git so they survive restarts and crashes.

Each session is one ref, `refs/turnback/<worktree>/sessions/<session>`,
pointing at a small commit whose tree holds the timeline (a header and one blob per
turn) and through whose parents every snapshot the timeline still uses is reachable
(timeline_objects.py has the layout). One ref update therefore commits a whole
timeline change atomically, and `git gc` keeps exactly the snapshots a timeline can
still reach: pruned turns free their objects.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pygit2

from ..core.gitrefs import delete_ref, set_aside_ref, set_ref
from ..core.objectbatch import ObjectBatch
from ..core.repository import WorkspaceRepo
from ..errors import RequestFailed
from ..results import RepositoryState, Rescued, SkippedPath, Turn
from . import commitpoint, timeline_objects

ACTIVE = "active"
UNDONE = "undone"
#: The header's field for the transcript of a session's turn still open (`open_transcript`).
OPEN_TRANSCRIPT = "openTranscript"
DEFAULT_SESSION = "default"
#: Session names become ref components: bounded, and encoded so any string is safe.
MAX_SESSION_LENGTH = 200
#: Bytes a session name may take in its ref's file name (255, less git's ".lock").
MAX_ENCODED_SESSION = 250
#: Rescued versions kept per session (newest win): enough for a day of forced restores,
#: bounded so that a loop of them cannot keep every state alive for `git gc`.
MAX_RESCUED = 20
#: Why a version was rescued: what overwrote it.
FORCED_REDO = "forcedRedo"
FORCED_UNDO = "forcedUndo"
REPLACED_BY_RESCUE = "replacedByRescue"
#: Files a user changed after a crash, which recovery left as they were.
RECOVERY_KEPT = "recoveryKept"
#: Timeline layouts a store remembers (a few sessions' current and prepared commits).
_LAYOUTS_KEPT = 16
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def rfc3339(moment: datetime) -> str:
    """The one time format of timelines and the wire: UTC, milliseconds, a "Z"."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_rfc3339() -> str:
    return rfc3339(datetime.now(timezone.utc))


def signature() -> pygit2.Signature:
    """A fixed identity: snapshots must work where no git identity is configured."""
    return pygit2.Signature("turnback", "turnback@localhost", int(time.time()), 0)


def encode_session(session: str) -> str:
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in session)


def open_transcript(turn: TurnRecord) -> str | None:
    """The transcript of the conversation an unsealed harness turn belongs to, if it names
    one: Claude Code and Codex append to it as the turn goes on."""
    metadata = turn.metadata if isinstance(turn.metadata, dict) else {}
    transcript, harness = metadata.get("transcriptPath"), metadata.get("harness")
    if turn.sealed or not isinstance(harness, str) or not harness:
        return None
    return transcript if isinstance(transcript, str) and transcript else None


@dataclass
class TurnRecord:
    """One turn as stored. Commit ids are hex strings."""

    turn: int
    id: str
    label: str
    created_at: str
    before: str
    state: str = ACTIVE
    metadata: Any = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    after: str | None = None
    sealed_at: str | None = None
    head: str | None = None
    head_ref: str | None = None
    #: On the newest turn of an undo: the work-tree state that undo replaced (redo's target).
    replaced: str | None = None
    #: The turns undone together with this one, as [oldest, newest] turn numbers.
    batch: list[int] | None = None
    #: On the newest turn of an undo: what that undo left alone, [{path, reason, by?}];
    #: its redo leaves them alone too (it takes back what the undo did, nothing more).
    undo_kept: list[dict[str, str]] | None = None
    #: What the latest "after" capture left out (`skipped` is the "before" capture's).
    after_skipped: list[dict[str, str]] | None = None
    #: Why an agent turn ended without its harness's "after" hook (running.py), if it did.
    interrupted: str | None = None
    #: When an undo or redo last wrote this turn's files back or forth (another session's
    #: turn running then holds that change in its snapshots: restore/batches.py).
    restored_at: str | None = None
    #: The member repositories at the "before" capture: [{path, head, headRef}] (None in
    #: turns recorded before workspaces held repositories: every member then counts as new).
    repositories: list[dict[str, Any]] | None = None
    #: The same at the latest "after" capture.
    after_repositories: list[dict[str, Any]] | None = None

    @property
    def sealed(self) -> bool:
        return self.after is not None

    def commits(self) -> list[str]:
        return [c for c in (self.before, self.after, self.replaced) if c]

    def to_result(self, session: str) -> Turn:
        """The turn as results show it: once sealed, `skipped` is the "after" capture's."""
        skipped, skipped_before = self.skipped, None
        if self.sealed and self.after_skipped is not None:
            skipped, skipped_before = self.after_skipped, self.skipped
        return Turn(
            id=self.id,
            session=session,
            number=self.turn,
            label=self.label,
            created_at=self.created_at,
            state=self.state,
            sealed=self.sealed,
            metadata=self.metadata,
            skipped=_skipped(skipped),
            sealed_at=self.sealed_at or None,
            skipped_before=_skipped(skipped_before) if skipped_before is not None else None,
            repositories=[
                RepositoryState(m["path"], m.get("head"), m.get("headRef"))
                for m in self.repositories or []
            ],
        )


def _skipped(stored: list[dict[str, str]]) -> list[SkippedPath]:
    return [SkippedPath(s["path"], s["reason"]) for s in stored]


@dataclass
class RescuedVersion:
    """Files a forced restore (or a rescue) overwrote, kept so that no edit is ever lost.

    `commit` is the saved work-tree state; `files` are the paths in it that the
    restore overwrote, the ones a rescue puts back.
    """

    id: str
    commit: str
    created_at: str
    reason: str
    files: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Any) -> RescuedVersion:
        if isinstance(data, str):  # timelines written before rescued versions had details
            return cls(id=data[:16], commit=data, created_at="", reason=FORCED_REDO)
        return cls(**_known_fields(cls, data))

    def to_result(self) -> Rescued:
        return Rescued(self.id, self.created_at, self.reason, self.files)


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys `cls` has: a timeline a newer turnback wrote still loads (its extras dropped)."""
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


@dataclass
class Timeline:
    session: str
    turns: list[TurnRecord] = field(default_factory=list)
    next_turn: int = 1
    updated_at: str = ""
    last_capture_at: str = ""
    #: States a forced restore overwrote, oldest first, so not even a forced redo loses work.
    rescued: list[RescuedVersion] = field(default_factory=list)

    @property
    def active(self) -> list[TurnRecord]:
        return [t for t in self.turns if t.state == ACTIVE]

    @property
    def undone(self) -> list[TurnRecord]:
        return [t for t in self.turns if t.state == UNDONE]

    def next_after(self, turn: TurnRecord) -> TurnRecord | None:
        later = [t for t in self.turns if t.turn > turn.turn]
        return later[0] if later else None

    def add_rescued(self, commit: str, reason: str, files: list[str]) -> RescuedVersion:
        """Keeps the saved state `commit` of `files`; the oldest beyond MAX_RESCUED go."""
        version = RescuedVersion(commit[:16], commit, now_rfc3339(), reason, sorted(files))
        self.rescued = [r for r in self.rescued if r.commit != commit] + [version]
        self.rescued = self.rescued[-MAX_RESCUED:]
        return version

    def find_rescued(self, version_id: str) -> RescuedVersion | None:
        return next((r for r in self.rescued if version_id in (r.id, r.commit)), None)

    def to_json(self) -> dict[str, Any]:
        """Format 1: the whole timeline in one document (storage, not the wire: see wire.py)."""
        return {**self.header_json(1), "turns": [asdict(t) for t in self.turns]}

    def header_json(self, version: int) -> dict[str, Any]:
        """Everything but the turns."""
        return {
            "version": version,
            "session": self.session,
            "nextTurn": self.next_turn,
            "updatedAt": self.updated_at,
            "lastCaptureAt": self.last_capture_at,
            "rescued": [asdict(r) for r in self.rescued],
            "turnCount": len(self.turns),
            OPEN_TRANSCRIPT: self._open_transcript(),
        }

    def _open_transcript(self) -> str | None:
        """The newest turn's `open_transcript`: another session's undo reads it from the
        header alone, without loading this timeline (history/running.py)."""
        newest = self.turns[-1] if self.turns else None
        return open_transcript(newest) if newest is not None and newest.state == ACTIVE else None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timeline:
        return cls(
            session=data["session"],
            turns=[TurnRecord(**_known_fields(TurnRecord, t)) for t in data.get("turns", [])],
            next_turn=data.get("nextTurn", 1),
            updated_at=data.get("updatedAt", ""),
            last_capture_at=data.get("lastCaptureAt", ""),
            rescued=[RescuedVersion.from_json(r) for r in data.get("rescued", [])],
        )


#: What reading a timeline that is not one raises: a loose ref file that does not parse,
#: a ref naming a blob or another commit, a `session.json` that is not the timeline's.
_UNREADABLE = (KeyError, ValueError, TypeError, AttributeError, pygit2.GitError)


class DamagedTimeline(RequestFailed):
    """A session's timeline that does not read back (its ref or objects damaged by hand,
    or by a crash on a disk that lost writes): said plainly, never an internal error."""

    def __init__(self, session: str, ref: str, cause: Exception) -> None:
        said = str(cause) if ref in str(cause) else f"{ref}: {cause}"
        #: What failed to read, for a caller that sets the timeline aside.
        self.cause = said
        super().__init__(
            f"The timeline of session '{session}' cannot be read ({said}). Other "
            "sessions are unaffected; the next capture into this session sets the damaged "
            "timeline aside (nothing is deleted) and starts the session over.",
            session=session,
        )


class NewerTimeline(RequestFailed):
    """A session's timeline a newer turnback wrote: left as it is, never set aside nor saved
    over (an older reader would have dropped its turns)."""

    def __init__(self, session: str, cause: timeline_objects.NewerFormat) -> None:
        super().__init__(
            f"The timeline of session '{session}' was written by a newer turnback ({cause}): "
            "this one leaves it as it is. Upgrade turnback to use it; other sessions are "
            "unaffected.",
            session=session,
        )


def session_targets(repo: pygit2.Repository, wanted: Callable[[str], bool]) -> list[pygit2.Oid]:
    """The timeline commits of the session refs `wanted` picks by name."""
    out = []
    for name in list(repo.references):
        if wanted(name):
            try:
                out.append(repo.references[name].target)
            except (KeyError, ValueError, pygit2.GitError):
                continue
    return out


def read_headers(
    repo: pygit2.Repository, targets: list[pygit2.Oid]
) -> list[tuple[pygit2.Commit, dict[str, Any]]]:
    """Each timeline commit of `targets` with its header, for those that read back."""
    out = []
    for target in targets:
        try:
            commit = repo[target]
            header = timeline_objects.read_header(repo, commit)
        except (*_UNREADABLE, timeline_objects.NewerFormat):
            continue
        if isinstance(header, dict) and isinstance(header.get("session"), str):
            out.append((commit, header))
    return out


class TimelineStore:
    """Reads and writes timelines; callers hold the repository lock for writes."""

    def __init__(self, ws: WorkspaceRepo) -> None:
        self.ws = ws
        self.repo = ws.repo
        self.sessions_prefix = f"{ws.ref_prefix}/sessions/"
        #: Touched on every change so that other processes notice cheaply.
        self.generation_path: Path = ws.state_dir / "generation"
        #: Layouts of timeline commits this store read or wrote, newest last: a save
        #: reuses the objects of the one its session's ref names.
        self._layouts: dict[pygit2.Oid, timeline_objects.Layout] = {}

    def ref_name(self, session: str) -> str:
        return self.sessions_prefix + encode_session(session)

    def load(self, session: str) -> Timeline | None:
        """The session's timeline; None if it has none; DamagedTimeline if it does not read."""
        name = self.ref_name(session)
        try:
            ref = self.repo.references.get(name)
            if ref is None:
                return None
            return self._read(ref.target)
        except timeline_objects.NewerFormat as newer:
            raise NewerTimeline(session, newer) from None
        except _UNREADABLE as error:
            raise DamagedTimeline(session, name, error) from None

    def set_aside(self, session: str) -> str:
        """Moves a damaged timeline's ref out of the sessions, never deleting what it names
        (a ref that parses goes under `refs/turnback/retired/`, a loose ref file that does
        not is moved out of the refs); the session then starts over. Returns where."""
        return set_aside_ref(self.repo, self.ref_name(session))

    def _read(self, oid: pygit2.Oid) -> Timeline:
        data, layout = timeline_objects.read(self.repo, self.repo[oid], self._layouts.get(oid))
        if layout is not None:
            self._remember(oid, layout)
        return Timeline.from_json(data)

    def _remember(self, oid: pygit2.Oid, layout: timeline_objects.Layout) -> None:
        self._layouts.pop(oid, None)
        self._layouts[oid] = layout
        while len(self._layouts) > _LAYOUTS_KEPT:
            del self._layouts[next(iter(self._layouts))]

    def all(self) -> list[Timeline]:
        """Every session's timeline that reads back (one that does not is left out)."""
        out = []
        for target in self._targets():
            try:
                out.append(self._read(target))
            except (*_UNREADABLE, timeline_objects.NewerFormat):
                continue  # (a newer turnback's is left to it: never pruned nor rewritten)
        return out

    def headers(self) -> list[dict[str, Any]]:
        """Each session's header (its name and times): what choosing a session and noticing
        changes need, in a time that does not grow with the sessions' turns."""
        return [header for _commit, header in self._headers()]

    def summaries(self) -> list[tuple[str, int, str]]:
        """(session, turns, updatedAt) of every session that reads back, from the headers:
        a list named every session by reading all their turns (300 sessions of 100 turns:
        1.3 s per list). A header saved before it counted its turns has them counted
        from its turn trees, no turn read."""
        out = []
        for commit, header in self._headers():
            count = header.get("turnCount")
            if not isinstance(count, int):
                try:
                    count = timeline_objects.count_turns(self.repo, commit, header)
                except _UNREADABLE:
                    continue
            out.append((header["session"], count, str(header.get("updatedAt", ""))))
        return out

    def _headers(self) -> list[tuple[pygit2.Commit, dict[str, Any]]]:
        """Each session's timeline commit and its header, for those that read back."""
        return read_headers(self.repo, self._targets())

    def _targets(self) -> list[pygit2.Oid]:
        return session_targets(self.repo, lambda name: name.startswith(self.sessions_prefix))

    def default_session(self) -> str:
        """The session most recently captured into in this work tree, by any process."""
        captured = [h for h in self.headers() if _nonempty_str(h.get("lastCaptureAt"))]
        if not captured:
            return DEFAULT_SESSION
        return max(captured, key=lambda h: h["lastCaptureAt"])["session"]

    def save(self, timeline: Timeline, operation: str | None = None) -> None:
        self.commit(timeline.session, self.prepare(timeline), operation)

    def ref_target(self, session: str) -> str | None:
        """The commit the session's ref names; None if none, or if the ref does not read."""
        try:
            ref = self.repo.references.get(self.ref_name(session))
        except pygit2.GitError:
            return None  # damaged: `load` says so plainly
        return str(ref.target) if ref is not None else None

    def commit(self, session: str, commit: str, operation: str | None = None) -> None:
        """Points the session at a prepared timeline commit: the moment a change is made.
        The command's own `operation` (a capture, an undo) is noted first, for an interrupt
        to tell whether it landed (commitpoint.py)."""
        if operation is not None:
            commitpoint.reaching(operation, lambda: self.ref_target(session) == commit)
        set_ref(self.repo, self.ref_name(session), pygit2.Oid(hex=commit), "timeline ref")
        self.touch()

    def prepare(self, timeline: Timeline) -> str:
        """Writes the timeline as a commit that no ref names yet (timeline_objects)."""
        timeline.updated_at = now_rfc3339()
        current = self.ref_target(timeline.session)
        base = self._layouts.get(pygit2.Oid(hex=current)) if current else None
        # Held in memory, then written loose and flushed together (objectbatch.py): a save
        # writes about ten small objects, each a file and a folder flushed in turn before.
        batch = ObjectBatch(self.repo, self.ws.objects_dir)
        try:
            oid, layout = timeline_objects.write(
                batch.repo,
                timeline.header_json(timeline_objects.FORMAT),
                timeline.turns,
                [r.commit for r in timeline.rescued],
                f"turnback timeline: {timeline.session}\n",
                signature(),
                base,
            )
            batch.commit(oid, blobs_in_trees=True)
        finally:
            batch.close()
        self._remember(oid, layout)
        return str(oid)

    def delete(self, session: str) -> None:
        ref = self.ref_name(session)
        delete_ref(self.repo, ref, "timeline ref deleted")
        self.touch()

    def touch(self) -> None:
        self.generation_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.generation_path, "a"):
            os.utime(self.generation_path)

    def generation(self) -> int:
        try:
            return os.stat(self.generation_path).st_mtime_ns
        except OSError:
            return 0


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
