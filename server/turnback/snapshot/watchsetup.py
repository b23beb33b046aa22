"""A long-lived process's watch set up on a thread of its own, a capture going first.

Setting the watch up lists every directory of the work tree (~300 ms on linux's 78k
files) so that later captures look only at what changed; the capture right after it
still scans the whole tree, since what changed before the watch began is unknown. A
harness that captures as soon as the server is up would wait for both. Instead the
setup stops before its next directory, the capture scans the tree without a watch (the
indexes the setup started loading are its), and the setup starts again once no capture
runs. It gives way once: a setup that every capture stopped might never finish.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import TurnbackError
from .fswatch import GaveWay

log = logging.getLogger(__name__)

#: Sets the watch up, asking the callable before each directory whether to give way.
SetUp = Callable[[Callable[[], bool]], object]


class WatchSetup:
    def __init__(self, set_up: SetUp) -> None:
        self._set_up = set_up
        self._state = threading.Condition()
        self._thread: threading.Thread | None = None
        #: Captures asked for and not yet answered (written under `_state`).
        self._captures = 0
        self._may_give_way = True
        self._closing = False

    def start(self) -> None:
        """Starts the setup, once per engine; requests do not wait for it."""
        with self._state:
            if self._thread is not None or self._closing:
                return
            # Not a daemon thread: an interpreter exiting waits for it rather than
            # stopping it while it seeds the scan cache's file.
            self._thread = threading.Thread(target=self._run, name="turnback-watch")
            self._thread.start()

    @contextmanager
    def capture(self) -> Iterator[None]:
        """Around a capture: a setup under way gives way to it (the first time)."""
        with self._state:
            self._captures += 1
        try:
            yield
        finally:
            with self._state:
                self._captures -= 1
                self._state.notify_all()

    def wait(self) -> None:
        """Until the setup is done or has failed (a daemon's first full scan comes after)."""
        thread = self._thread
        if thread is not None:
            thread.join()

    def close(self) -> None:
        """Stops a setup under way before its next directory, and waits for it."""
        with self._state:
            self._closing = True
            self._state.notify_all()
        self.wait()

    def _give_way(self) -> bool:
        # Asked before each directory: plain reads, and only this thread writes the flag.
        if self._closing:
            return True
        if self._captures and self._may_give_way:
            self._may_give_way = False
            return True
        return False

    def _run(self) -> None:
        while True:
            try:
                self._set_up(self._give_way)
                return
            except GaveWay:
                pass
            except TurnbackError as error:  # captures answer the same error, clearly
                log.warning("not watching %s", error.message)
                return
            except Exception:
                log.exception("watch setup")
                return
            with self._state:
                while self._captures and not self._closing:
                    self._state.wait()
                if self._closing:
                    return
