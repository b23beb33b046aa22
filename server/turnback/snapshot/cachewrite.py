"""Saves the stat cache after a capture has answered, on another thread.

Rewriting a 100k-entry index file takes ~25 ms, and nothing the capture returns depends
on it: the anchor ref already keeps every object the in-memory index names, and the file
only lets the next process start warm. The caller settles the write before it touches
the index again (the write reads it) and before anything replaces the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

import pygit2

from .workdir_scan import executor

log = logging.getLogger(__name__)


class CacheWriter:
    """At most one pending write of one scanner's private index."""

    def __init__(self) -> None:
        self._pending: Future[None] | None = None

    def start(self, index: pygit2.Index, then: Callable[[], None]) -> None:
        """Writes `index` to its file, then runs `then` (only if the write succeeded)."""
        self.settle()

        def write() -> None:
            index.write()
            then()

        self._pending = executor().submit(write)

    def settle(self) -> None:
        """Waits for the pending write; a failed one only leaves the older file (a cache)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            pending.result()
        except (OSError, pygit2.GitError) as error:
            log.warning(
                "turnback could not save its scan cache (%s); the next process rescans", error
            )
