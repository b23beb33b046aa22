"""Many short connections onto one pygls server: ids rewritten, answers routed back.

pygls writes every outgoing message to one writer. Each request that arrives
gets a daemon-wide id before pygls sees it, so two hooks that both send id 1
never collide; the response is sent back on the connection that asked, with
the id it used. Messages without a routed id (a `window/showMessage` about a
recovered restore) go to the connection whose request caused them, found
through a context variable that pygls's handler tasks inherit.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import time
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class Connection(Protocol):
    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...


#: The connection whose message is being handled (None: the daemon's own work).
current: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "turnback_daemon_connection", default=None
)


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class MuxWriter:
    """pygls's writer: sends each message to the connection it belongs to."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        #: daemon id -> (connection, the client's id, method, when it arrived)
        self.routes: dict[int, tuple[Connection, Any, Any, float]] = {}

    def route(self, message: dict[str, Any], connection: Connection) -> None:
        """Gives a request a daemon-wide id and remembers who asked."""
        if "method" in message and "id" in message:
            new_id = next(self._ids)
            self.routes[new_id] = (connection, message["id"], message["method"], time.monotonic())
            message["id"] = new_id

    def write(self, data: bytes) -> None:
        _header, _, body = data.partition(b"\r\n\r\n")
        try:
            message = json.loads(body)
        except ValueError:  # pragma: no cover - pygls writes JSON
            logger.error("unreadable outgoing message dropped")
            return
        target = current.get()
        if isinstance(message, dict) and "method" not in message:
            message.setdefault("id", None)  # JSON-RPC: an error for no known request has id null
            routed = self.routes.pop(message.get("id"), None)  # type: ignore[arg-type]
            if routed is not None:
                target, message["id"], method, since = routed
                took = (time.monotonic() - since) * 1000
                logger.info("answered %s in %.1f ms", method, took)
        if target is None or target.is_closing():
            return  # the daemon's own messages, or a client that left: nobody to tell
        target.write(frame(message))

    def close(self) -> None:
        """pygls closes its writer on exit; the connections close themselves."""
