"""Notices timeline changes made by any process and tells the client.

Every timeline write touches a small generation file in the work tree's
private state directory; polling its stat is cheap, and comparing the
sessions' update times says which sessions changed, so the client gets one
`snapshot/didChange` per changed session and fresh code lenses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..engine import Engine

if TYPE_CHECKING:
    from .server import TurnbackServer

logger = logging.getLogger(__name__)

#: How often another process's changes are looked for; a stat call per work tree.
POLL_SECONDS = 0.5


class TimelineWatcher:
    def __init__(self, ls: TurnbackServer) -> None:
        self.ls = ls
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
        for engine in list(self.ls.engines.values()):
            key = str(engine.ws.root)
            generation = engine.store.generation()
            previous_generation, previous = self.known.get(key, (0, {}))
            if generation == previous_generation:
                continue
            current = await asyncio.to_thread(engine.sessions_state)
            self.known[key] = (generation, current)
            changed = [
                s for s in current.keys() | previous.keys() if current.get(s) != previous.get(s)
            ]
            for session in sorted(changed):
                self.ls.protocol.notify(
                    "snapshot/didChange",
                    {"workspace": self.ls.workspace_uri(engine), "session": session},
                )
            if changed:
                self.refresh_lenses()

    def refresh_lenses(self) -> None:
        caps = self.ls.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        try:
            await self.ls.workspace_code_lens_refresh_async(None)
        except Exception as error:  # an old client may not support it
            logger.debug("codeLens/refresh failed: %s", error)
