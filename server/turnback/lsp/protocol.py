"""The JSON-RPC protocol as turnback needs it, on top of pygls.

- Custom `snapshot/*` params reach handlers as plain JSON: pygls would turn
  them into namedtuples that rename keys such as `odd-key` or `class`, and
  `metadata` must come back exactly as sent.
- A request whose params do not fit its LSP type gets an InvalidParams error;
  pygls would otherwise fail while parsing and never answer (the client hangs).
  A message that is not JSON-RPC 2.0 (a batch, no method, a bad id) gets
  InvalidRequest when it has an id, and is dropped when it has none.
- `$/cancelRequest` marks the request as cancelled instead of killing its
  task: handlers check the mark at safe points, so a cancelled restore never
  stops halfway.
- The lifecycle is the specification's: before `initialize` a request gets
  ServerNotInitialized (-32002) and a notification is dropped; `initialize`
  is answered once; after `shutdown` a request gets InvalidRequest; `exit`
  is always obeyed (pygls exits 0 after `shutdown`, 1 without).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import lsp_method
from pygls.protocol.json_rpc import JsonRPCRequestMessage

from .pygls_internals import (
    CancelHook,
    mark_shut_down,
    open_document,
    request_finished,
    send_error,
)

logger = logging.getLogger(__name__)

CUSTOM_PREFIX = "snapshot/"


class TurnbackProtocol(CancelHook):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancelled_ids: set[Any] = set()
        #: An `initialize` request was accepted: it is never answered a second time.
        self.initialize_received = False
        #: A `shutdown` request arrived: from then on only `exit` is obeyed.
        self.shutdown_received = False
        self.shutdown_id: Any = None

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls calls this for every JSON object, nested ones too (metadata may hold a
        # "jsonrpc" key): keep them all plain and structure only the top level, below.
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._reject(None, "a JSON-RPC message must be an object (batches are not supported)")
            return
        structured = self._structure(message)
        if structured is not None:
            super().handle_message(structured)

    def _reject(self, msg_id: Any, why: str) -> None:
        logger.warning("Invalid request: %s", why)
        send_error(self, msg_id, JsonRpcInvalidRequest(message=why))

    def _structure(self, data: dict[str, Any]) -> Any:
        msg_id = data.get("id")
        if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
            self._reject(None, "the id must be a string or a number")
            return None
        if data.get("jsonrpc") != "2.0":
            if "id" in data:
                self._reject(msg_id, 'the jsonrpc member must be "2.0"')
            return None
        method = data.get("method")
        if "method" in data and not isinstance(method, str):
            if "id" in data:
                self._reject(msg_id, "the method must be a string")
            return None
        if method is None and not ("result" in data or "error" in data):
            if "id" in data:
                self._reject(msg_id, "a request needs a method")
            return None
        if method is not None and not self._lifecycle_allows(method, "id" in data, msg_id):
            return None
        if isinstance(method, str) and method.startswith(CUSTOM_PREFIX):
            if "id" in data:
                return JsonRPCRequestMessage(
                    id=msg_id, method=method, jsonrpc="2.0", params=data.get("params")
                )
            # Every custom method is a request: run as a notification, an undo had nobody
            # to answer, and its error reached the user as an internal class name.
            logger.warning("%s sent as a notification (no id): ignored, it is a request", method)
            return None
        try:
            structured = super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and method is not None:
                message = f"Invalid params for {method}: they do not match the LSP type"
                if not isinstance(error, JsonRpcInvalidParams):
                    message = f"Could not read the {method} request"
                logger.warning("%s: %r", message, data.get("params"))
                reply = error.__class__(message=message)
                send_error(self, msg_id, reply)
            return None
        if "id" in data and method is not None and getattr(structured, "id", None) is None:
            # A notification's method sent with an id: pygls ran it and dropped the id, so
            # the client waited for an answer forever.
            self._reject(msg_id, f"{method} is a notification: it is sent without an id")
            return None
        if "id" in data and method == types.INITIALIZE:
            self.initialize_received = True  # only once its params were readable
        elif "id" in data and method == types.SHUTDOWN:
            self.shutdown_received = True
            self.shutdown_id = msg_id
        return structured

    def _lifecycle_allows(self, method: str, is_request: bool, msg_id: Any) -> bool:
        """Whether the message may run now; refused requests are answered here."""
        if method == types.EXIT:
            return True
        refusal: JsonRpcException | None = None
        if self.shutdown_received:
            refusal = JsonRpcInvalidRequest(
                message=f"{method}: the server is shutting down; only exit is accepted"
            )
        elif method == types.INITIALIZE and self.initialize_received:
            refusal = JsonRpcInvalidRequest(
                message="initialize: the server is already initialized (it may be sent once)"
            )
        elif method != types.INITIALIZE and not self.initialize_received:
            refusal = JsonRpcServerNotInitialized(
                message=f"{method}: the server is not initialized; send initialize first"
            )
        if refusal is None:
            return True
        if is_request:
            logger.warning("Refused: %s", refusal.message)
            send_error(self, msg_id, refusal)
        return False

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Exit code 0 once `shutdown` was asked for, even while its handler still runs.

        pygls decides on a flag its shutdown handler sets at the end; a client that sends
        `exit` right behind `shutdown` would otherwise get code 1.
        """
        if self.shutdown_received:
            mark_shut_down(self)
        yield from super().lsp_exit(*args)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, Any]:
        """A change to a document never opened is dropped (pygls raised KeyError, shown
        to the user as a server error): the server keeps no text it could apply it to."""
        if open_document(self.workspace, params.text_document.uri) is None:
            logger.warning("didChange for a document not open: %s", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def cancel_requested(self, msg_id: Any) -> None:
        if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            logger.warning("$/cancelRequest with an id that is no request's: %r", msg_id)
            return  # JSON-RPC ids are numbers or strings
        self.cancelled_ids.add(msg_id)
        if request_finished(self, msg_id):
            self.cancelled_ids.discard(msg_id)

    def is_cancelled(self, msg_id: Any) -> bool:
        return msg_id in self.cancelled_ids

    def forget(self, msg_id: Any) -> None:
        self.cancelled_ids.discard(msg_id)
