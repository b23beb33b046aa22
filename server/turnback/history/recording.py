"""Writing a capture into a timeline: a new turn ("before"), or sealing one ("after")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .timeline import ACTIVE, Timeline, TurnRecord

if TYPE_CHECKING:
    from ..snapshot.captured import Snapshot
    from .context import Context


def open_turn(
    ctx: Context,
    timeline: Timeline,
    snap: Snapshot,
    label: str | None,
    metadata: Any,
    stamp: str,
) -> TurnRecord:
    """Appends a new turn whose "before" state is `snap`; a new turn drops the redo stack."""
    number = timeline.next_turn
    commit = ctx.snapshot_commit(
        snap, f"turnback: before turn {number} of session {timeline.session}\n\n{label or ''}\n"
    )
    timeline.turns = [t for t in timeline.turns if t.state == ACTIVE]
    head = ctx.ws.head_commit()
    turn = TurnRecord(
        turn=number,
        id=commit[:16],
        label=label if label is not None else f"Turn {number}",
        created_at=stamp,
        before=commit,
        metadata=metadata,
        skipped=[s.to_json() for s in snap.skipped],
        head=str(head) if head else None,
        head_ref=ctx.ws.head_name(),
        repositories=ctx.scanner.states(),
    )
    timeline.turns.append(turn)
    timeline.next_turn = number + 1
    timeline.last_capture_at = stamp
    keep = ctx.settings.turns_per_session
    if len(timeline.turns) > keep:
        timeline.turns = timeline.turns[-keep:]
    return turn


def seal_turn(
    ctx: Context, timeline: Timeline, snap: Snapshot, metadata: Any, stamp: str
) -> TurnRecord:
    """Records `snap` as the newest active turn's "after" state."""
    turn = timeline.active[-1]
    turn.after = ctx.snapshot_commit(snap, f"turnback: after turn {turn.turn}\n")
    turn.after_skipped = [s.to_json() for s in snap.skipped]
    turn.after_repositories = ctx.scanner.states()
    turn.sealed_at = stamp
    if metadata is not None:
        turn.metadata = metadata
    return turn
