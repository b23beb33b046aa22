"""Which turns an undo or redo takes, and the states between them it must respect.

An undo takes the newest active turns (or those down to a named one), a redo the oldest
undone ones; each turn's redo goes back to the state its undo replaced. Between two
turns of one undo, the user may have edited a file after the first was sealed: such an
edit is the user's, and the undo must not take it for the agent's. Nor must it take for
its own what another session's agent did while its turns ran (two agents in one tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from ..core.treeops import changed_paths, entries_at
from ..errors import InvalidParams, RequestFailed
from ..history.context import Context, RestoreOptions
from ..history.timeline import ACTIVE, UNDONE, Timeline, TurnRecord, now_rfc3339
from .plan import LeftByUndo, Step


def left_by_last_undo(ctx: Context, timeline: Timeline, newest: TurnRecord) -> LeftByUndo | None:
    """What the undo of the turns after `newest` replaced, if they are undone, and the
    state it meant to leave: the paths it kept (a repository they created) still hold
    the first. Undone one at a time, the second undo took such a file for an edit of
    the user's; `-n 2` did not."""
    following = timeline.next_after(newest)
    if following is None or following.state != UNDONE:
        return None
    high = following.batch[1] if following.batch else following.turn
    last = next((t for t in timeline.turns if t.turn == high), None)
    if last is None or not last.replaced:
        return None
    return LeftByUndo(ctx.tree(last.replaced), ctx.tree(following.before))


def edited_between(ctx: Context, batch: list[TurnRecord], paths: set[str]) -> frozenset[str]:
    """The paths of an undo that the user changed between two of its turns: after one
    was sealed, before the next began. Undone together, the edit would go unnoticed."""
    edited: set[str] = set()
    ordered = sorted(paths)
    for turn, following in pairwise(batch):
        if not turn.after:
            continue  # an open turn ends where the next begins: no gap between them
        ended = entries_at(ctx.tree(turn.after), ordered)
        began = entries_at(ctx.tree(following.before), ordered)
        edited.update(path for path in ordered if ended[path] != began[path])
    return frozenset(edited)


@dataclass
class OtherSessions:
    """What other sessions did while the turns being restored ran, path -> session."""

    #: Changed by a turn that ran wholly within those turns, or by an undo or redo run
    #: meanwhile: that session's, kept for it.
    kept: dict[str, str] = field(default_factory=dict)
    #: Changed while a turn of another session that began before them, or ended after
    #: them, also ran: whose change it is, snapshots cannot tell; asked (a conflict).
    unclear: dict[str, str] = field(default_factory=dict)


def changed_by_others(
    ctx: Context, timeline: Timeline, batch: list[TurnRecord], paths: set[str], redo: bool = False
) -> OtherSessions:
    """What another session changed of a restore's paths while the batch's turns ran.
    Snapshots hold the whole work tree, so a turn of Codex sealed inside a turn of Claude
    Code is part of the latter's change: undone unseen, it was lost to both (its own
    session still called it active); so is another session's undo or redo run meanwhile
    (its file, put back, was deleted again). Where two turns overlapped only in part (two
    agents started at different times), a change made in the overlap is either's: the
    restore asks rather than guess (it kept, once, an agent's own edit for the other). A
    turn that began before the batch and ended after it counts not: its snapshots merely
    hold the batch's change. A redo also leaves alone what another session's turn, undone
    since, had changed: the batch's redo state still holds it."""
    start = batch[0].created_at
    end = batch[-1].sealed_at or now_rfc3339()
    found = OtherSessions()
    for header in ctx.store.headers():
        other = header["session"]
        touched = max(str(header.get("lastCaptureAt") or ""), str(header.get("updatedAt") or ""))
        if other == timeline.session or touched < start:
            continue  # recorded nothing since these turns began (a seal moves updatedAt)
        try:
            theirs = ctx.store.load(other)
        except RequestFailed:
            continue  # a damaged timeline: its own commands say so
        for turn in theirs.turns if theirs is not None else []:
            if not turn.after:
                continue  # running: refused elsewhere
            span = _span(turn, start, end, redo)
            restored = start < (turn.restored_at or "") < end
            if span is None and not restored:
                continue
            into = found.kept if restored or span == WITHIN else found.unclear
            # What that turn changed, from its trees (a walk of what differs: a lookup of
            # each restored path in every such turn took 3.8 s with 300 agents' sessions).
            changed = changed_paths(ctx.repo, ctx.tree(turn.before), ctx.tree(turn.after))
            for path in sorted(changed & paths):
                into.setdefault(path, other)
    for path in found.kept:
        found.unclear.pop(path, None)
    return found


#: How another session's turn lay against the turns being restored.
WITHIN, PARTLY = "within", "partly"


def _span(turn: TurnRecord, start: str, end: str, redo: bool) -> str | None:
    """WITHIN or PARTLY where `turn` (another session's, sealed) made its change while the
    turns from `start` to `end` ran, and that change stands (or, for a redo, was taken back
    since: a redo writing back what stands is right); None where it did not, or where it
    ran around them all."""
    if turn.state != (UNDONE if redo else ACTIVE):
        return None
    sealed = turn.sealed_at or ""
    if sealed <= start or turn.created_at >= end:
        return None  # not within these turns
    if turn.created_at <= start and sealed >= end:
        return None  # around the batch
    return WITHIN if start <= turn.created_at and sealed <= end else PARTLY


def undo_batch(ctx: Context, timeline: Timeline, options: RestoreOptions) -> list[TurnRecord]:
    """The active turns an undo takes back: down to `options.turn`, or the newest count."""
    active = timeline.active
    if options.turn is None:
        return active[-options.count :]
    target = ctx.find_turn(timeline, options.turn)
    if target.state != ACTIVE:
        raise InvalidParams("turn", f"turn {target.turn} is not active: nothing to undo")
    return [t for t in active if t.turn >= target.turn]


def redo_turns(ctx: Context, timeline: Timeline, options: RestoreOptions) -> list[TurnRecord]:
    """The undone turns a redo brings back: up to `options.turn`, or the oldest count."""
    undone = timeline.undone
    if options.turn is None:
        return undone[: options.count]
    target = ctx.find_turn(timeline, options.turn)
    if target.state != UNDONE:
        raise InvalidParams("turn", f"turn {target.turn} is not undone: nothing to redo")
    return [t for t in undone if t.turn <= target.turn]


def redo_target_skipped(timeline: Timeline, last: TurnRecord) -> list[dict[str, str]]:
    """What the capture of the redo's target state left out: the next turn's "before"
    capture's; a state an undo replaced kept what it left out, so it names none."""
    following = timeline.next_after(last)
    return following.skipped if following is not None and not last.replaced else []


def redo_step(ctx: Context, timeline: Timeline, turn: TurnRecord) -> Step:
    """Redoing one turn: the files its undo batch changed, back to its end state."""
    low, high = turn.batch or [turn.turn, turn.turn]
    expected = ctx.tree(turn.before)
    paths: set[str] = set()
    for member in timeline.turns:
        if low <= member.turn <= high:
            # Undone turns always have a known end state: no scan needed.
            paths |= ctx.turn_changes(timeline, member, expected)
    following = timeline.next_after(turn)
    target = turn.replaced or (following.before if following else None)
    if target is None:  # never restore "nothing" over the work tree
        raise RequestFailed(f"Turn {turn.turn} has no state to redo to")
    return Step(paths, expected, ctx.tree(target), target)
