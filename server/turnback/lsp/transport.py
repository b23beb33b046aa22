"""Runs the server over stdio or TCP with turnback's own frame reader.

This is pygls's `start_io` / `start_tcp` with one change: messages are read by
`framing.FrameParser` instead of pygls's `run_async` loop, so broken framing,
bodies that are not JSON and absurd lengths get a JSON-RPC error (id null) and
the server keeps reading. Everything after the body (structuring, dispatch,
writing) is still pygls's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .framing import PARSE_ERROR, FrameError, FrameParser
from .pygls_internals import finish_requests, keep_tcp_server, new_stop_event, send_error

logger = logging.getLogger(__name__)

#: Bytes asked for per read: small enough to stay responsive, large enough for big frames.
READ_CHUNK = 256 * 1024


async def read_messages(
    stop: threading.Event, read_chunk: Callable[[], Awaitable[bytes]], server: LanguageServer
) -> None:
    """Feeds the stream through the frame parser and hands each message to pygls."""
    parser = FrameParser()
    while not stop.is_set():
        chunk = await read_chunk()
        if not chunk or stop.is_set():
            break
        for item in parser.feed(chunk):
            if isinstance(item, FrameError):
                _reply_error(server, item.code, item.message)
            else:
                _dispatch(server, item)


def _number(text: str) -> int | float:
    """A JSON integer; one past Python's 4,300-digit limit is taken as infinite (its
    parameter's check then names it), not as a body that is not JSON (id null: the
    client's request was never answered)."""
    if len(text.lstrip("-")) <= 4300:
        return int(text)
    return float("-inf") if text.startswith("-") else float("inf")


def _dispatch(server: LanguageServer, body: bytes) -> None:
    try:
        message = json.loads(body, parse_int=_number)
    except (ValueError, RecursionError) as error:  # bad JSON, bad UTF-8, absurd nesting
        _reply_error(server, PARSE_ERROR, f"the message body is not JSON: {error}")
        return
    try:
        server.protocol.handle_message(message)
    except SystemExit as exited:  # `exit`: pygls's handler ends the process this way
        raise ExitAsked(exited.code if isinstance(exited.code, int) else 1) from None
    except Exception as error:
        logger.exception("Unable to handle message")
        server.report_server_error(error, JsonRpcException)


def _reply_error(server: LanguageServer, code: int, message: str) -> None:
    logger.warning("Unreadable message: %s", message)
    cls = JsonRpcParseError if code == PARSE_ERROR else JsonRpcInvalidRequest
    error = cls(message=f"{cls.MESSAGE}: {message}")
    send_error(server.protocol, None, error)


class EndingWriter(StdoutWriter):
    """stdout that goes quiet once closed (by `exit`) or broken. A request still running at
    `exit` then answers into nothing: its answer's failed write was reported as an error,
    whose own message failed to write, and so on, filling stderr while the process never
    ended (a client sends `exit` when `shutdown` is slow to answer, during a long undo)."""

    def __init__(self, stdout: Any) -> None:
        super().__init__(stdout)
        self.ended = False

    def close(self) -> None:
        self.ended = True
        super().close()

    def write(self, data: bytes) -> None:
        if self.ended:
            return
        try:
            super().write(data)
        except (OSError, ValueError):  # the client went away, or the stream is closed
            self.ended = True


def start_io(server: LanguageServer) -> int:
    """pygls's `_start_io_async` with turnback's reader; returns the exit code.

    `exit` ends the server with SystemExit: code 0 after `shutdown`, 1 without (as LSP
    says), which pygls's own loop swallowed.
    """
    stop = new_stop_event(server)
    stdin = sys.stdin.buffer
    server.protocol.set_writer(EndingWriter(sys.stdout.buffer))

    async def run() -> int:
        loop = asyncio.get_running_loop()
        reading = asyncio.ensure_future(
            read_messages(
                stop,
                lambda: loop.run_in_executor(server.thread_pool, stdin.read1, READ_CHUNK),
                server,
            )
        )
        signalled = _on_stop_signals(loop)
        waiting = asyncio.ensure_future(signalled.wait())
        await asyncio.wait({reading, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            try:
                await reading  # (its exception, if any)
            except ExitAsked as asked:
                # What is under way ends first, as on a stop signal: the process waits for
                # its threads anyway, and cancelling a handler mid-way printed tracebacks.
                stop.set()
                await finish_requests(server.protocol, None, STOP_WAIT)
                return asked.code
            return 0
        # SIGTERM, SIGHUP (a terminal or an editor going away) or Ctrl-C: what is under way
        # (an undo writing files) finishes and answers, then the server ends. It died
        # mid-restore, leaving the tree half undone until another command recovered it.
        # Nothing sent after the signal is taken up (it ran, and was answered "canceled").
        stop.set()
        reading.cancel()
        await finish_requests(server.protocol, None, STOP_WAIT)
        raise _Stopped

    code = 0
    try:
        code = asyncio.run(run())
    except _Stopped:
        # The reading thread is blocked in stdin's read, which no exit path interrupts.
        _close_engines(server)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os._exit(0)
    except BrokenPipeError:
        logger.error("Connection to the client is lost! Shutting down the server.")
    except KeyboardInterrupt:
        pass
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else 1
    finally:
        server.shutdown()
    return code


#: How long a server told to stop waits for the requests under way (a large undo).
STOP_WAIT = 60.0


class _Stopped(Exception):
    """A stop signal, once the requests under way were answered."""


class ExitAsked(Exception):
    """`exit` arrived, with the code LSP gives it: an ordinary exception, which the
    reading task hands to its awaiter (pygls's SystemExit escaped the event loop, and
    asyncio printed the task's and the cancelled requests' tracebacks)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _on_stop_signals(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """An event the stop signals set (none where the loop cannot take them: Windows). A
    second signal ends the process at once, as a kill would: a request that waits long
    (behind another process's lock) must not hold a user's second Ctrl-C; a restore cut so
    is recovered by the next command, as after a kill."""
    signalled = asyncio.Event()

    def stop() -> None:
        if signalled.is_set():
            os._exit(1)
        signalled.set()

    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        number = getattr(signal, name, None)
        if number is None or signal.getsignal(number) is signal.SIG_IGN:
            continue  # (`nohup` ignores SIGHUP: so does the server)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(number, stop)
    return signalled


def _close_engines(server: LanguageServer) -> None:
    """Saves each engine's stat cache, so the next process starts warm."""
    for engine in getattr(server, "open_engines", list)():
        with contextlib.suppress(Exception):
            engine.close()


def start_tcp(server: LanguageServer, host: str, port: int) -> None:
    """pygls's `start_tcp` with turnback's reader."""
    stop = new_stop_event(server)
    ending: list[asyncio.Event] = []  # set by a stop signal, or by `exit`
    client: list[asyncio.StreamWriter] = []  # the one connection served

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if client:
            # One server, one client, as over stdio: a second connection (another editor,
            # a port probe) took the first one's answers, and ended the server on closing.
            logger.warning("Refused a second connection: this server has its client")
            writer.close()
            return
        client.append(writer)
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        try:
            with contextlib.suppress(asyncio.CancelledError):  # (a stop signal)
                await read_messages(stop, lambda: reader.read(READ_CHUNK), server)
        except ExitAsked:
            ending[0].set()  # the server ends as on a stop signal
            return
        server.shutdown()

    async def listen() -> Any:
        tcp = await asyncio.start_server(connection, host, port)
        keep_tcp_server(server, tcp)
        signalled = _on_stop_signals(asyncio.get_running_loop())
        ending.append(signalled)
        async with tcp:
            serving = asyncio.ensure_future(tcp.serve_forever())
            waiting = asyncio.ensure_future(signalled.wait())
            await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():  # a stop signal: what is under way answers first
                stop.set()
                await finish_requests(server.protocol, None, STOP_WAIT)
                await asyncio.to_thread(_close_engines, server)
                serving.cancel()
            else:
                waiting.cancel()

    try:
        asyncio.run(listen())
    except asyncio.CancelledError:
        logger.debug("Server was cancelled")
