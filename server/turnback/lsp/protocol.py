"""The JSON-RPC protocol as turnback needs it, on top of pygls.

- Custom `snapshot/*` params reach handlers as plain JSON: pygls would turn
  them into namedtuples that rename keys such as `odd-key` or `class`, and
  `metadata` must come back exactly as sent.
- A request whose params do not fit its LSP type gets an InvalidParams error;
  pygls would otherwise fail while parsing and never answer (the client hangs).
- `$/cancelRequest` marks the request as cancelled instead of killing its
  task: handlers check the mark at safe points, so a cancelled restore never
  stops halfway.
"""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

logger = logging.getLogger(__name__)

CUSTOM_PREFIX = "snapshot/"
#: Handed to pygls instead of a message that could not be parsed; it ignores `$/` methods.
_DROPPED = "$/turnback/dropped"


class TurnbackProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancelled_ids: set[Any] = set()

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if isinstance(method, str) and method.startswith(CUSTOM_PREFIX):
            if "id" in data:
                return JsonRPCRequestMessage(
                    id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
                )
            return JsonRPCNotification(
                method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and "method" in data:
                message = f"Invalid params for {method}: they do not match the LSP type"
                if not isinstance(error, JsonRpcInvalidParams):
                    message = f"Could not read the {method} request"
                logger.warning("%s: %r", message, data.get("params"))
                reply = error.__class__(message=message)
                self._send_response(data["id"], None, reply.to_response_error())
            return JsonRPCNotification(method=_DROPPED, jsonrpc="2.0", params=None)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancelled_ids.add(msg_id)
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self.cancelled_ids.discard(msg_id)

    def is_cancelled(self, msg_id: Any) -> bool:
        return msg_id in self.cancelled_ids

    def forget(self, msg_id: Any) -> None:
        self.cancelled_ids.discard(msg_id)
