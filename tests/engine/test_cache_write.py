"""The stat cache's write waits for the operation that made it (snapshot/cachewrite.py).

Started as the scan ended, the write took a core and the disk from the turn's own record.
In process, on a real repository: the order of the timeline's save and the write's start.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from helpers import make_repo, write
from turnback.engine import Engine
from turnback.history.timeline import TimelineStore
from turnback.snapshot import cachewrite
from turnback.snapshot.cachewrite import STALE_LOCK_SECONDS
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


# Proves a lock that a killed writer left beside the stat cache's file is removed once it
# is stale, and the file written again (every write failed, and every capture started
# cold); a fresh lock, another process's write under way, is left alone.
def test_a_stale_lock_on_the_cache_file_is_removed(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    engine = Engine(str(root))
    try:
        engine.capture(label="t1")
        engine.settle()
        index_file = engine.scanner.root.private.path
        lock = index_file.with_name(index_file.name + ".lock")
        lock.write_bytes(b"")
        write(root, "a.txt", "edited\n")
        engine.capture(label="t2")
        engine.settle()
        assert lock.exists()
        written_before = index_file.stat().st_mtime_ns
        long_ago = time.time() - 2 * STALE_LOCK_SECONDS
        os.utime(lock, (long_ago, long_ago))
        write(root, "a.txt", "edited again\n")
        engine.capture(label="t3")
        engine.settle()
        assert not lock.exists()
        assert index_file.stat().st_mtime_ns != written_before
    finally:
        engine.close()
