"""Every use of pygls's private parts, in one place (checked by tests/unit/test_private_apis.py).

pygls has no public way to answer a message it could not structure (a bad id, a refused
lifecycle step, a broken frame), to see whether a request has finished, to hear a
`$/cancelRequest` without its task being killed, to exit 0 when `exit` follows `shutdown`
at once, or to run its stop and shutdown logic around a reader of our own (lsp/transport.py).
These go through `_send_response`, `_request_futures`, `_handle_cancel_notification`,
`_shutdown`, `_stop_event` and `_server`. The tests and the benchmarks drive a client the
same way (`_converter`, `_send_data`, a client's `_server` process); those are here too, so
one test sees them all. pyproject.toml pins pygls to the minor version they were checked on.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any
from urllib.parse import unquote

from pygls.client import JsonRPCClient
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pygls.workspace import TextDocument, Workspace

# ---- the server side ----------------------------------------------------------------------


def document_key(uri: str) -> str:
    """The key pygls keeps an open document under: its URI with %-escapes decoded. Clients
    escape a space or a non-ASCII letter anywhere in the path (VS Code always does), so a
    lookup by the URI as sent finds no document there."""
    return unquote(uri)


def open_document(workspace: Workspace, uri: str) -> TextDocument | None:
    """The open document `uri` names, or None (never a document read from disk)."""
    return workspace.text_documents.get(document_key(uri))


def send_error(protocol: JsonRPCProtocol, msg_id: Any, error: JsonRpcException) -> None:
    """Answers `msg_id` (None: an unreadable message) with `error`, outside any handler.

    JSON-RPC answers an unreadable message with `"id": null`, which pygls's serialiser
    leaves out (a strict client, vscode-jsonrpc, then takes it for no response at all):
    that answer is written as plain JSON."""
    if msg_id is not None:
        protocol._send_response(msg_id, None, error.to_response_error())
        return
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    protocol._send_data({"jsonrpc": "2.0", "id": None, "error": body})


def request_finished(protocol: JsonRPCProtocol, msg_id: Any) -> bool:
    """Whether pygls has already answered the request `msg_id` (or never knew it)."""
    future = protocol._request_futures.get(msg_id)
    return future is not None and future.done()


async def finish_requests(protocol: JsonRPCProtocol, shutdown_id: Any, timeout: float) -> None:
    """Runs before pygls's `shutdown` cancels every pending request (and, cancelling the
    futures of requests the server sent, changed the dict it iterates: an InternalError with
    a traceback). Requests the server sent are cancelled here (a client shutting down will
    not answer them); requests being handled run to their end, up to `timeout`, so an undo
    under way is answered with its result, not "cancelled" after it was done."""
    for msg_id, future in list(protocol._request_futures.items()):
        if msg_id != shutdown_id and not future.done() and not isinstance(future, asyncio.Future):
            # Forgotten first: an answer that comes anyway then finds no future to set (a
            # cancelled one raised InvalidStateError in pygls's reader).
            protocol._request_futures.pop(msg_id, None)
            future.cancel()
    this = asyncio.current_task()  # (pygls keeps the shutdown handler's own task there too)
    handling = [
        future
        for future in list(protocol._request_futures.values())
        if isinstance(future, asyncio.Future) and not future.done() and future is not this
    ]
    if handling:
        await asyncio.wait(handling, timeout=timeout)


def mark_shut_down(protocol: LanguageServerProtocol) -> None:
    """Makes pygls's `exit` handler exit 0, as after a finished `shutdown`."""
    protocol._shutdown = True


class CancelHook(LanguageServerProtocol):
    """Routes `$/cancelRequest` to `cancel_requested`, which subclasses override.

    pygls's own handling cancels the request's future, which would stop a restore at
    whatever point it had reached.
    """

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancel_requested(msg_id)

    def cancel_requested(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)


def new_stop_event(server: LanguageServer) -> threading.Event:
    """The event pygls's `shutdown` sets to stop a reader: here, turnback's own reader."""
    server._stop_event = stop = threading.Event()
    return stop


def keep_tcp_server(server: LanguageServer, tcp: asyncio.Server) -> None:
    """Hands the listening socket to pygls, whose `shutdown` closes it."""
    server._server = tcp


# ---- the client side: the tests and the benchmarks ----------------------------------------


def keep_responses_plain(protocol: JsonRPCProtocol) -> None:
    """Responses stay plain JSON: pygls would make namedtuples that rename keys (`class`)."""
    protocol._converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))


def send_raw_request(protocol: JsonRPCProtocol, msg_id: str, method: str, params: Any) -> Future:
    """Sends params exactly as given (the client would refuse to serialise ill-typed ones)."""
    future: Future = Future()
    protocol._request_futures[msg_id] = future
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return future


def send_raw_notification(protocol: JsonRPCProtocol, method: str, params: Any) -> None:
    """A notification with params exactly as given (ill-typed ones, for the tests)."""
    protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})


def server_process(client: JsonRPCClient) -> asyncio.subprocess.Process:
    """The server process a client started with `start_io`."""
    return client._server  # type: ignore[return-value]
