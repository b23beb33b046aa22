"""turnback's packs unpacked once a capture has answered, on a thread of their own.

A capture writes its few objects as one pack (core/ownpacks.py); writing them loose, a
file and its folder flushed each, is this thread's job, so that no agent waits for it.
It takes no repository lock: like the user's own gc, it only ever removes a pack whose
objects are loose and flushed, so captures and restores run beside it. It is not a
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

    def start_if_due(self) -> None:
        """Starts unpacking what captures listed, unless a thread is already at it (what
        it leaves, the next capture's thread takes)."""
        if not self._scanner.packs_due():
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._unpack, name="turnback-unpack")
        self._thread.start()

    def wait(self) -> None:
        """Until the thread running, if any, is done (tests; an engine closing)."""
        if self._thread is not None:
            self._thread.join()

    def _unpack(self) -> None:
        try:
            self._scanner.unpack_packs()
        except Exception:  # housekeeping: it never fails an operation, nor kills a server
            log.warning("turnback: unpacking its packs failed", exc_info=True)
