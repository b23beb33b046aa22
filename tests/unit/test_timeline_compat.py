"""Timelines written by a newer turnback (with fields this one does not know) still load."""

from __future__ import annotations

from turnback.history.timeline import Timeline


# A turn or rescued version carrying an unknown key loads instead of failing every command.
def test_timeline_with_unknown_fields_loads():
    data = {
        "version": 1,
        "session": "default",
        "nextTurn": 2,
        "turns": [
            {
                "turn": 1,
                "id": "abc",
                "label": "t1",
                "created_at": "2026-01-01T00:00:00.000Z",
                "before": "0" * 40,
                "a_field_from_the_future": [1, 2],
            }
        ],
        "rescued": [
            {"id": "r1", "commit": "1" * 40, "created_at": "", "reason": "forcedRedo", "x": 1}
        ],
    }
    timeline = Timeline.from_json(data)
    assert [t.label for t in timeline.turns] == ["t1"]
    assert [r.id for r in timeline.rescued] == ["r1"]
