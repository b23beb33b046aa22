"""Turns in progress: an undo or redo never lands in the middle of a running agent turn.

A turn a harness hook opened (its metadata names the `harness`) and nothing sealed yet is
*running* while the work tree keeps changing, and *interrupted* once the harness says so
(its next prompt in the session, its session-end or failure hook), or once the work tree
has been quiet for `Settings.turn_quiet_period` seconds. "Last change" needs no daemon: it
is the newest modification time among the paths the turn changed (compared with its
"before" snapshot; a deleted path counts through its nearest existing folder), or the
turn's creation time when it changed nothing yet. Turns captured by hand (no harness) are
*open* until sealed, and undo them as always.

The engine calls `guard_undo` / `guard_redo` under the repository lock before it restores,
and `annotate_list` to add each listed turn's `progress`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pygit2

from ..core.treeops import changed_paths
from ..errors import Reason, RequestFailed
from ..results import RunningTurn, Turn
from .timeline import (
    ACTIVE,
    OPEN_TRANSCRIPT,
    UNDONE,
    Timeline,
    TurnRecord,
    now_rfc3339,
    open_transcript,
    rfc3339,
)

if TYPE_CHECKING:
    from .context import Context, RestoreOptions

RUNNING = "running"
INTERRUPTED = "interrupted"
SEALED = "sealed"
#: A hand-made turn not sealed yet: it ends where the next one starts (or now).
OPEN = "open"

#: Why a turn was marked interrupted when an undo sealed it.
QUIET_PERIOD = "quietPeriod"


class TurnRunning(RequestFailed):
    """Undo or redo would touch a turn whose agent is still changing the work tree."""

    reason = Reason.TURN_RUNNING

    def __init__(
        self,
        turn: TurnRecord,
        activity: Activity,
        session: str,
        operation: str,
        elsewhere: bool = False,
    ) -> None:
        ago = seconds_text(activity.seconds_since_change)
        whose = f" of session '{session}', which shares this work tree," if elsewhere else ""
        super().__init__(
            f"{operation.capitalize()} refused: turn {turn.turn}{whose} is still running "
            f"({activity.harness} session {activity.harness_session} last changed the work "
            f"tree {ago} ago). Wait until it ends (or is quiet for "
            f"{seconds_text(activity.quiet_period)}), or retry with force.",
            session=session,
            turn=turn.turn,
            harness=activity.harness,
            harness_session=activity.harness_session,
            seconds_since_change=round(activity.seconds_since_change, 1),
            quiet_period=activity.quiet_period,
        )


@dataclass(frozen=True)
class Activity:
    """Who runs an unsealed harness turn and how long ago it last changed the work tree."""

    harness: str
    harness_session: str
    last_change: float
    seconds_since_change: float
    quiet_period: int

    @property
    def running(self) -> bool:
        return self.seconds_since_change < self.quiet_period

    def to_result(self, turn: TurnRecord, session: str) -> RunningTurn:
        return RunningTurn(
            session=session,
            turn=turn.turn,
            id=turn.id,
            harness=self.harness,
            harness_session=self.harness_session,
            last_change_at=_rfc3339(self.last_change),
            seconds_since_change=self.seconds_since_change,
            quiet_period=self.quiet_period,
        )


def harness_of(turn: TurnRecord) -> str | None:
    """The harness whose hook opened the turn, or None for a turn captured by hand."""
    metadata = turn.metadata
    if isinstance(metadata, dict) and isinstance(metadata.get("harness"), str):
        return metadata["harness"] or None
    return None


def seconds_text(value: float) -> str:
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.0f} min"


def _rfc3339(stamp: float) -> str:
    return rfc3339(datetime.fromtimestamp(min(stamp, time.time()), timezone.utc))


def _created(turn: TurnRecord) -> float:
    try:
        return datetime.fromisoformat(turn.created_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def changed_at(st: os.stat_result) -> float:
    """When the file last changed, by the clock of this machine: its ctime, which the
    kernel sets and no tool can (`tar x`, `cp -p` and `touch -d` set mtimes a day or two
    hours away, and a turn looked finished, or running for hours), never later than now.
    Windows keeps no ctime (`st_ctime` is the creation time there): its mtime."""
    stamp = st.st_mtime if os.name == "nt" else st.st_ctime
    return min(stamp, time.time())


def _changed_at(root: str, path: str) -> float | None:
    """When the path changed, or its nearest existing folder (a deletion changes it)."""
    parts = path.split("/")
    for depth in range(len(parts), -1, -1):
        try:
            return changed_at(os.lstat(os.path.join(root, *parts[:depth])))
        except OSError:
            continue
    return None


class TurnProgress:
    """Each turn's progress in one timeline; scans the work tree at most once, when needed."""

    def __init__(self, ctx: Context, timeline: Timeline, now: pygit2.Tree | None = None) -> None:
        self.ctx = ctx
        self.timeline = timeline
        self._now = now

    def now(self) -> pygit2.Tree:
        if self._now is None:
            snap = self.ctx.capture_now(None, None)
            self._now = self.ctx.repo[snap.tree]  # type: ignore[assignment]
        return self._now  # type: ignore[return-value]

    @property
    def known_now(self) -> pygit2.Tree | None:
        """The work tree's state, if a question already scanned it (shared, not redone)."""
        return self._now

    def may_run(self, turn: TurnRecord) -> bool:
        """Unsealed, opened by a harness, not marked interrupted, and no later prompt yet."""
        return (
            not turn.sealed
            and turn.interrupted is None
            and harness_of(turn) is not None
            and self.timeline.next_after(turn) is None
        )

    def activity(self, turn: TurnRecord) -> Activity | None:
        """How recently the turn's work tree changed, for a turn that may still run."""
        if not self.may_run(turn):
            return None
        paths = changed_paths(self.ctx.repo, self.ctx.tree(turn.before), self.now())
        root = str(self.ctx.ws.root)
        stamps = [s for s in (_changed_at(root, p) for p in paths) if s is not None]
        last = max([_created(turn), *stamps])
        metadata = turn.metadata if isinstance(turn.metadata, dict) else {}
        return Activity(
            harness=harness_of(turn) or "",
            harness_session=str(metadata.get("sessionId", self.timeline.session)),
            last_change=last,
            seconds_since_change=max(0.0, time.time() - last),
            quiet_period=self.ctx.settings.turn_quiet_period,
        )

    def of(self, turn: TurnRecord) -> tuple[str, Activity | None]:
        """The turn's progress (running, interrupted, sealed or open) and its activity."""
        if turn.interrupted is not None:
            return INTERRUPTED, None
        if turn.sealed:
            return SEALED, None
        if harness_of(turn) is None:
            return OPEN, None
        activity = self.activity(turn)
        if activity is None or not activity.running:
            return INTERRUPTED, activity
        return RUNNING, activity


def annotate_list(
    ctx: Context, timeline: Timeline | None, listed: list[Turn]
) -> tuple[RunningTurn | None, RunningTurn | None]:
    """Sets `progress` on each listed turn; returns the session's running turn, and another
    session's running turn that an undo or redo of this session would wait for (None)."""
    if timeline is None:
        return None, None
    progress = TurnProgress(ctx, timeline)
    running: RunningTurn | None = None
    by_number = {t.turn: t for t in timeline.turns}
    for item in listed:
        record = by_number[item.number]
        state, activity = progress.of(record)
        item.progress = state
        if state == RUNNING and activity is not None:
            running = activity.to_result(record, timeline.session)
    elsewhere = running_elsewhere(ctx, timeline, progress.known_now) if timeline.turns else None
    if elsewhere is None:
        return running, None
    session, record, activity = elsewhere
    return running, activity.to_result(record, session)


def _seal_now(ctx: Context, turn: TurnRecord, message: str) -> None:
    """Seals `turn` with the work tree as it is now: what its redo brings back."""
    snap = ctx.capture_now(None, None)
    turn.after = ctx.snapshot_commit(snap, message)
    turn.after_repositories = ctx.scanner.states()
    turn.sealed_at = now_rfc3339()


def _seal_interrupted(ctx: Context, timeline: Timeline, turn: TurnRecord) -> None:
    """Seals an interrupted turn with the work tree as it is: what its redo brings back."""
    _seal_now(ctx, turn, f"turnback: after interrupted turn {turn.turn}\n")
    turn.interrupted = QUIET_PERIOD
    ctx.store.save(timeline)


def guard_undo(ctx: Context, session: str, options: RestoreOptions) -> None:
    """Refuses an undo that would touch a running turn; seals an interrupted one first.

    Every undo includes the newest active turn, the only one that may still run; another
    session's running turn in the same work tree refuses it too. A dry run and a forced
    undo are never refused, and a dry run never seals.
    """
    timeline = ctx.store.load(session)
    if timeline is None or not timeline.active or options.dry_run:
        return
    newest = timeline.active[-1]
    progress = TurnProgress(ctx, timeline)
    activity = progress.activity(newest)
    if activity is not None and activity.running and not options.force:
        raise TurnRunning(newest, activity, session, "undo")
    if activity is not None and not activity.running:
        _seal_interrupted(ctx, timeline, newest)
    if not options.force:
        _guard_others(ctx, timeline, "undo", progress.known_now)


def _guard_others(
    ctx: Context, timeline: Timeline, operation: str, now: pygit2.Tree | None
) -> None:
    """Refuses a restore while another session's agent turn runs in the same work tree.

    Snapshots hold the whole work tree, so the states a restore writes hold what that
    agent wrote meanwhile, or lack what it is writing now: an undo deleted the file a
    running Codex turn had just made (two agents in one repository)."""
    found = running_elsewhere(ctx, timeline, now)
    if found is not None:
        session, turn, activity = found
        raise TurnRunning(turn, activity, session, operation, elsewhere=True)


def running_elsewhere(
    ctx: Context, timeline: Timeline, now: pygit2.Tree | None = None
) -> tuple[str, TurnRecord, Activity] | None:
    """Another session's running turn in the same work tree (its session, turn and
    activity), which a restore of `timeline`'s turns waits for; None if none runs.

    A turn opened since this session's newest turn began counts; so does an older one
    whose harness's transcript is still being written (`written_lately`). Any other older
    one (a conversation killed long ago, never sealed) would look running whenever this
    session's own agent writes, and hold its undo back; sessions never captured since
    are not even read. `timeline` has turns."""
    since = timeline.turns[-1].created_at
    quiet = ctx.settings.turn_quiet_period
    for header in ctx.store.headers():
        other = header["session"]
        if other == timeline.session:
            continue
        older = str(header.get("lastCaptureAt") or "") < since
        if older and not written_lately(header.get(OPEN_TRANSCRIPT), quiet):
            continue
        try:
            theirs = ctx.store.load(other)
        except RequestFailed:
            continue  # a damaged timeline: its own commands say so
        if theirs is None or not theirs.active:
            continue
        newest = theirs.active[-1]
        if newest.created_at < since and not written_lately(open_transcript(newest), quiet):
            continue
        progress = TurnProgress(ctx, theirs, now)
        activity = progress.activity(newest)
        now = progress.known_now
        if activity is not None and activity.running:
            return other, newest, activity
    return None


def written_lately(path: object, quiet_period: int) -> bool:
    """Whether the file at `path` changed within the quiet period: a harness still writing
    its transcript still runs its agent, though its turn began before this session's."""
    if not isinstance(path, str) or not path:
        return False
    try:
        return time.time() - changed_at(os.stat(path)) < quiet_period
    except (OSError, ValueError):
        return False


def guard_redo(ctx: Context, session: str, options: RestoreOptions) -> None:
    """Refuses a redo of a turn whose agent still writes (a turn undone by force mid-run)."""
    timeline = ctx.store.load(session)
    if timeline is None or options.dry_run or options.force:
        return
    undone = [t for t in timeline.turns if t.state == UNDONE]
    if not undone:
        return
    if options.turn is not None:
        target = ctx.find_turn(timeline, options.turn)
        touched = [t for t in undone if t.turn <= target.turn]
    else:
        touched = undone[: options.count]
    progress = TurnProgress(ctx, timeline)
    for turn in touched:
        activity = progress.activity(turn)
        if activity is not None and activity.running:
            raise TurnRunning(turn, activity, session, "redo")
    _guard_others(ctx, timeline, "redo", progress.known_now)


def mark_interrupted(ctx: Context, session: str, turn_ref: int | str, reason: str) -> bool:
    """The harness said its turn ended without its "after" hook: seal it and say why.

    Only the hook's own turn, and only while nothing sealed it; True when it was marked.
    """
    with ctx.locked():
        timeline = ctx.store.load(session)
        if timeline is None:
            return False
        turn = next(
            (t for t in timeline.turns if turn_ref in (t.turn, t.id, t.before)),
            None,
        )
        if turn is None or turn.sealed or turn.interrupted is not None:
            return False
        if turn.state == ACTIVE and timeline.next_after(turn) is None:
            _seal_now(ctx, turn, f"turnback: after turn {turn.turn}\n")
        turn.interrupted = reason
        ctx.store.save(timeline)
        return True
