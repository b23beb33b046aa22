"""Notices timeline changes made by any process and says which sessions changed.

Every timeline write touches a small generation file in the work tree's
private state directory; polling its stat is cheap, and comparing the
sessions' update times says which sessions changed. The watcher knows nothing
of the server: it asks `engines()` what to poll and calls `on_change(engine,
sessions)`, which the server turns into `snapshot/didChange` and fresh code lenses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import TurnbackError

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)

#: How often another process's changes are looked for; a stat call per work tree.
POLL_SECONDS = 0.5


class TimelineWatcher:
    def __init__(
        self,
        engines: Callable[[], Iterable[Engine]],
        on_change: Callable[[Engine, list[str]], None],
    ) -> None:
        self.engines = engines
        self.on_change = on_change
        self.known: dict[str, tuple[int, dict[str, str]]] = {}
        self._task: asyncio.Task[Any] | None = None
        self._wake: asyncio.Event | None = None

    def watch(self, engine: Engine) -> None:
        key = str(engine.ws.root)
        if key not in self.known:
            self.known[key] = (engine.store.generation(), engine.sessions_state())

    def start(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def check_soon(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)
            self._wake.clear()
            try:
                await self._check()
            except Exception:  # never let the watcher die; log and keep polling
                logger.exception("timeline watcher")

    async def _check(self) -> None:
        for engine in list(self.engines()):
            key = str(engine.ws.root)
            generation = engine.store.generation()
            previous_generation, previous = self.known.get(key, (0, {}))
            if generation == previous_generation:
                continue
            try:
                current = await asyncio.to_thread(engine.sessions_state)
            except TurnbackError as refused:  # the folder deleted, say: nothing to tell
                logger.debug("timeline watcher: %s", refused.message)
                continue
            self.known[key] = (generation, current)
            changed = [
                s for s in current.keys() | previous.keys() if current.get(s) != previous.get(s)
            ]
            if changed:
                self.on_change(engine, sorted(changed))
