"""The stat cache's write waits for the operation that made it (snapshot/cachewrite.py).

Started as the scan ended, the write took a core and the disk from the turn's own record.
In process, on a real repository: the order of the timeline's save and the write's start.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from helpers import make_repo, write
from turnback.engine import Engine
from turnback.history.timeline import TimelineStore
from turnback.snapshot import cachewrite
from turnback.snapshot.workdir_scan import executor


class _RecordingPool:
    """The scan pool, noting each job it is given."""

    def __init__(self, events: list[str]) -> None:
        self._events = events
        self._real = executor()

    def submit(self, job, *args) -> Future:  # type: ignore[no-untyped-def]
        self._events.append("cache write started")
        return self._real.submit(job, *args)


# Proves the capture's turn is saved before the stat cache's write starts, and that the
# write still happens: the index file is there once the engine closes.
def test_the_cache_write_starts_after_the_turn_is_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n", "src/b.txt": "b\n"})
    events: list[str] = []
    monkeypatch.setattr(cachewrite, "executor", lambda: _RecordingPool(events))
    real_save = TimelineStore.save

    def save(self: TimelineStore, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        events.append("turn saved")
        real_save(self, *args, **kwargs)

    monkeypatch.setattr(TimelineStore, "save", save)
    engine = Engine(str(root))
    try:
        engine.capture(label="t1")
        write(root, "src/b.txt", "b by the agent\n")
        events.clear()
        engine.capture(label="t2")
        assert events == ["turn saved", "cache write started"]
    finally:
        engine.close()
    index_file = engine.scanner.root.private.path
    assert index_file.is_file() and index_file.stat().st_size > 0
