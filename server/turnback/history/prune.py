"""Dropping old turns, rescued versions and emptied sessions (`prune`).

The redo stack and every turn its undo batches span always stay: a redo needs them.
The engine checks the parameters and holds the repository lock around `prune`.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import InvalidParams
from ..results import PruneResult, RemovedRescued, RemovedTurn
from .timeline import Timeline, TimelineStore, TurnRecord, rfc3339

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def prune(
    store: TimelineStore,
    targets: list[Timeline],
    keep: int | None,
    cutoff: str | None,
    rescued: bool,
) -> PruneResult:
    """Prunes each of `targets` by `keep` and `cutoff`; rescued versions only when `rescued`."""
    result = PruneResult()
    for timeline in targets:
        _prune_one(store, timeline, keep, cutoff, rescued, result)
    message = f"Removed {len(result.removed_turns)} turns"
    if rescued:
        message += f", {len(result.removed_rescued)} rescued versions"
    result.message = f"{message} and {len(result.removed_sessions)} sessions"
    return result


def _prune_one(
    store: TimelineStore,
    timeline: Timeline,
    keep: int | None,
    cutoff: str | None,
    rescued: bool,
    result: PruneResult,
) -> None:
    survivors = _survivors(timeline, keep, cutoff)
    gone = [t for t in timeline.turns if t not in survivors]
    kept_rescued = _newest(timeline.rescued, keep, cutoff) if rescued else None
    gone_rescued = [r for r in timeline.rescued if r not in (kept_rescued or [])]
    if not gone and not (rescued and gone_rescued):
        return
    result.removed_turns += [RemovedTurn(timeline.session, t.turn, t.id) for t in gone]
    timeline.turns = survivors
    if kept_rescued is not None:
        result.removed_rescued += [RemovedRescued(timeline.session, r.id) for r in gone_rescued]
        timeline.rescued = kept_rescued
    if survivors or timeline.rescued:
        store.save(timeline)
    else:
        store.delete(timeline.session)
        result.removed_sessions.append(timeline.session)


def _survivors(timeline: Timeline, keep: int | None, cutoff: str | None) -> list[TurnRecord]:
    """The turns that stay: the newest by the rules, and all a redo still needs."""
    newest = _newest(timeline.turns, keep, cutoff)
    needed = {n for t in timeline.undone for n in range((t.batch or [t.turn])[0], t.turn + 1)}
    return [t for t in timeline.turns if t in newest or t.turn in needed]


def _newest(items: list[Any], keep: int | None, cutoff: str | None) -> list[Any]:
    """The newest `keep` of `items` (oldest first, each with `created_at`), from the first
    one not before `cutoff` on: an item stamped early by a clock set back later keeps its
    place, where dropping it alone cut a hole in the timeline (the undo of the turn before
    it then took its changes for the user's)."""
    survivors = items
    if keep is not None:
        survivors = survivors[-keep:] if keep else []
    if cutoff is not None:
        recent = (k for k, item in enumerate(survivors) if item.created_at >= cutoff)
        survivors = survivors[next(recent, len(survivors)) :]
    return survivors


def parse_age(value: Any) -> str:
    """ "7d", "12h", "30m", "45s", "2w" or an RFC 3339 time → an RFC 3339 cutoff."""
    if not isinstance(value, str) or not value:
        raise InvalidParams("olderThan", 'must be a duration like "7d" or an RFC 3339 time')
    if value[-1] in _UNITS and value[:-1].isascii() and value[:-1].isdigit():
        try:
            span = timedelta(seconds=int(value[:-1]) * _UNITS[value[-1]])
            moment = datetime.now(timezone.utc) - span
        except (OverflowError, ValueError):
            raise InvalidParams("olderThan", "is too far in the past") from None
        return rfc3339(moment)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParams(
            "olderThan", 'must be a duration like "7d" or an RFC 3339 time'
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return rfc3339(moment.astimezone(timezone.utc))
    except OverflowError:  # 9999-12-31T23:59:59-05:00 is past the year 9999 in UTC
        raise InvalidParams("olderThan", "is out of the range of dates") from None
