"""turnback's packs unpacked once a capture has answered, on a thread of their own.

Idle while `ownpacks.UNPACK_AFTER_CAPTURE` is off (ownpacks.py says why): no capture
then lists a pack, and nothing starts this thread.

A capture writes its few objects as one pack (core/ownpacks.py); writing them loose, a
file and its folder flushed each, is this thread's job, so that no agent waits for it.
It holds no repository lock: like the user's own gc, it only ever removes a pack whose
objects are loose and flushed, so captures and restores run beside it; it waits for
them, between two objects, so that their flushes never queue behind its own. It is not a
daemon thread: a CLI process finishes unpacking before it exits; one killed midway
leaves a listed pack, which the next process unpacks.
"""

from __future__ import annotations

import logging
import threading

from .members import WorkspaceScanner

log = logging.getLogger(__name__)


class Unpacking:
    def __init__(self, scanner: WorkspaceScanner) -> None:
        self._scanner = scanner
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()
        #: Whether a capture listed a pack since the running thread last looked, and
        #: whether a thread runs (decided under the mutex: is_alive lags behind).
        self._wanted = False
        self._running = False

    def start_if_due(self) -> None:
        """Unpacks what the captures listed: a thread that is at it already goes round
        once more, or a new one starts."""
        if not self._scanner.packs_due():
            return
        with self._mutex:
            self._wanted = True
            if self._running:
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name="turnback-unpack")
            self._thread.start()

    def wait(self) -> None:
        """Until the thread running, if any, is done (tests; an engine closing)."""
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._mutex:
                if not self._wanted:
                    self._running = False  # a later start_if_due starts another thread
                    return
                self._wanted = False
            try:
                self._scanner.unpack_packs()
            except Exception:  # housekeeping: it never fails an operation nor kills a server
                log.warning("turnback: unpacking its packs failed", exc_info=True)
