"""history/prune.py's rule for which turns and rescued versions stay."""

from __future__ import annotations

from types import SimpleNamespace

from turnback.history.prune import _newest


def stamped(*times: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(created_at=t) for t in times]


# Ensures an age cut drops only the oldest turns, up to the first recent one: a turn stamped
# early (the clock was behind when it began) between two recent ones was dropped alone,
# leaving a hole the undo of the turn before it then read as the user's edits.
def test_an_age_cut_never_leaves_a_hole():
    items = stamped("2026-11-28T10:00:00Z", "2026-11-28T07:00:00Z", "2026-11-28T10:05:00Z")
    assert _newest(items, None, "2026-11-28T09:00:00Z") == items
    older = stamped("2026-11-28T08:00:00Z", "2026-11-28T08:30:00Z", "2026-11-28T10:05:00Z")
    assert _newest(older, None, "2026-11-28T09:00:00Z") == older[2:]
    assert _newest(older, 2, "2026-11-28T09:00:00Z") == older[2:]
    assert _newest(older, None, "2026-11-28T11:00:00Z") == []
