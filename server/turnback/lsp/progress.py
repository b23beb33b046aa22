"""Work-done progress for long operations, safe to drive from a worker thread.

Progress starts only when the client asked for it (a `workDoneToken` in the
params) or supports server-created progress and the work is still running
after a short delay, so fast captures cost no extra round trip.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

#: Captures faster than this finish before any progress UI would be seen.
SHOW_AFTER_SECONDS = 0.3


class Progress:
    """One request's progress; its Cancel button (`window/workDoneProgress/cancel`) cancels
    the request, as `$/cancelRequest` does: `requests` maps each shown token to its id."""

    def __init__(
        self,
        ls: LanguageServer,
        title: str,
        token: Any | None,
        request_id: Any = None,
        requests: dict[Any, Any] | None = None,
    ) -> None:
        self.ls = ls
        self.title = title
        self.token = token
        self.request_id = request_id
        self.requests = requests if requests is not None else {}
        self.loop = asyncio.get_running_loop()
        self.started = False
        self.finished = False
        self._delayed: asyncio.TimerHandle | None = None
        caps = ls.client_capabilities.window
        self.server_created = bool(caps and caps.work_done_progress)

    def start(self) -> None:
        if self.token is not None:
            self._begin()
        elif self.server_created:
            self._delayed = self.loop.call_later(SHOW_AFTER_SECONDS, self._create)

    def _create(self) -> None:
        if self.finished:
            return
        self.token = f"turnback-{uuid.uuid4().hex[:8]}"

        async def create() -> None:
            try:
                await self.ls.work_done_progress.create_async(self.token)
            except Exception:  # the client refused: no progress, the work goes on
                self.token = None
                return
            if not self.finished:
                self._begin()

        self.loop.create_task(create())

    def _begin(self) -> None:
        self.started = True
        if self.request_id is not None:
            self.requests[self.token] = self.request_id
        self.ls.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title=self.title, cancellable=True)
        )

    def report(self, message: str, percentage: int | None) -> None:
        """Callable from any thread."""

        def send() -> None:
            if self.started and not self.finished:
                self.ls.work_done_progress.report(
                    self.token,
                    types.WorkDoneProgressReport(message=message, percentage=percentage),
                )

        self.loop.call_soon_threadsafe(send)

    def finish(self, message: str = "Done") -> None:
        self.finished = True
        self.requests.pop(self.token, None)
        if self._delayed is not None:
            self._delayed.cancel()
        if self.started:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
