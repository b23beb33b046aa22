"""turnback's packs merged after a capture has answered, on a thread of their own.

A merge (core/ownpacks.py) writes deltas: 0.1-0.3 s of libgit2's delta search on linux's
tree every few captures, which no agent should wait for. The thread takes the locks a
capture takes, in the same order, so it waits for a capture or a restore and they wait
for it; what it leaves due, a later capture merges. It is not a daemon thread: a CLI
process finishes the merge before it exits, and a merge cut short by a kill is safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from .members import WorkspaceScanner

log = logging.getLogger(__name__)


class PackMerges:
    def __init__(
        self,
        scanner: WorkspaceScanner,
        locked: Callable[[], AbstractContextManager[None]],
        engine_lock: threading.RLock,
    ) -> None:
        self._scanner = scanner
        self._locked = locked
        self._engine_lock = engine_lock
        self._thread: threading.Thread | None = None

    def start_if_due(self) -> None:
        if not self._scanner.packs_due():
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._merge, name="turnback-merge")
        self._thread.start()

    def wait(self) -> None:
        """Until the merge running, if any, is done (tests; an engine closing)."""
        if self._thread is not None:
            self._thread.join()

    def _merge(self) -> None:
        try:
            with self._locked(), self._engine_lock:  # a capture's order: no deadlock
                self._scanner.merge_packs()
        except Exception:  # housekeeping: it never fails an operation, nor kills a server
            log.warning("turnback: merging its packs failed", exc_info=True)
