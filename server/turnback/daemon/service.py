"""`turnback daemon`: the LSP server's handlers and engine, served on a private socket.

One daemon per work tree (an exclusive lock on `daemon/lock`, which also holds
its pid). It initialises the same pygls server `turnback serve` runs, as if an
editor had opened the work tree, watches the work tree (inotify) and does one
full scan up front, so hook captures take the watcher path. It listens on
`daemon/sock` (0600 in a 0700 directory), serves only processes of its own
user, and exits after `idle` seconds without a request. Every operation takes
the repository lock and recovers interrupted restores as any process does.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

from pygls.exceptions import JsonRpcException

from ..errors import TurnbackError
from ..lsp.framing import INVALID_REQUEST, PARSE_ERROR, FrameError, FrameParser
from ..lsp.transport import READ_CHUNK, _reply_error
from . import mux
from .client import workspace_uri
from .paths import Location, locate, socket_address
from .security import make_private_dir, peer

logger = logging.getLogger("turnback.daemon")

IDLE_ENV = "TURNBACK_DAEMON_IDLE_TIMEOUT"
IDLE_CONFIG = "turnback.daemonIdleTimeout"
#: Long enough to span an agent's turn between its "before" and "after" hooks.
DEFAULT_IDLE_TIMEOUT = 300.0
_LOG_LIMIT = 1024 * 1024


def idle_timeout(flag: float | None, engine: Any) -> float:
    """The idle time: the flag, else the environment, else git config, else the default."""
    if flag is not None:
        return flag
    for source in (os.environ.get(IDLE_ENV), _git_config(engine)):
        with contextlib.suppress(TypeError, ValueError):
            value = float(source)  # type: ignore[arg-type]
            if value > 0:
                return value
    return DEFAULT_IDLE_TIMEOUT


def _git_config(engine: Any) -> str | None:
    try:
        return engine.repo.config[IDLE_CONFIG]
    except (KeyError, ValueError):
        return None


def run(folder: str, idle: float | None = None) -> int:
    """Runs the daemon for the work tree holding `folder` until it has been idle."""
    location = locate(folder)
    if location is None:
        print(f"turnback: {folder} is not a directory", file=sys.stderr)
        return 2  # bad input, as for every command's -C
    refused = _cannot_serve(folder)
    if refused is not None:  # said before anything is made for it
        print(f"turnback: {refused}", file=sys.stderr)
        return 1
    os.makedirs(location.state_dir, exist_ok=True)
    make_private_dir(location.dir)
    lock_fd = os.open(location.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        running = os.read(lock_fd, 32).decode(errors="replace").strip()
        os.close(lock_fd)
        print(
            f"turnback: a daemon (pid {running or '?'}) already serves {location.root}",
            file=sys.stderr,
        )
        return 0  # one daemon per work tree: the running one serves
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, f"{os.getpid()}\n".encode())
    _log_to(location.log)
    try:
        return asyncio.run(Daemon(location).serve(idle))
    except Exception:
        logger.exception("daemon failed")
        return 1
    finally:
        logger.info("exit (pid %d)", os.getpid())
        os.close(lock_fd)


def _cannot_serve(folder: str) -> str | None:
    """Why turnback cannot serve `folder` (the file system root, a bare repository...), in
    the words every command says it; a daemon only logged it, in a folder made for it."""
    from ..core.repository import open_workspace
    from ..errors import TurnbackError

    try:
        open_workspace(folder)
    except TurnbackError as error:
        return error.message
    return None


def _log_to(path: str) -> None:
    with contextlib.suppress(OSError):
        if os.path.getsize(path) > _LOG_LIMIT:
            os.replace(path, path + ".1")
    handler = logging.FileHandler(path)
    os.chmod(path, 0o600)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.getLogger("pygls").setLevel(logging.WARNING)


#: How long a daemon told to stop waits for the requests under way (a capture behind the
#: repository lock included): past a hook's own deadline, so its answer is never lost.
DRAIN_WAIT = 30.0


class Daemon:
    def __init__(self, location: Location) -> None:
        self.location = location
        self.writer = mux.MuxWriter()
        self.connections = 0
        self._open: set[asyncio.StreamWriter] = set()
        self.last_activity = time.monotonic()
        self.stop = asyncio.Event()
        #: The socket file this daemon bound (device, inode), once it listens.
        self._bound: tuple[int, int] | None = None

    async def serve(self, idle: float | None) -> int:
        from ..lsp.main import quiet_expected_errors
        from ..lsp.server import create_server

        quiet_expected_errors()
        self.server = server = create_server()
        engine = await self._initialize()
        if engine is None:
            return 1
        timeout = idle_timeout(idle, engine)
        listener = self._listen()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, self.stop.set)
        unix_server = await asyncio.start_unix_server(self._connection, sock=listener)
        self._bound = _identity(self.location.socket)
        logger.info(
            "listening on %s for %s (pid %d, idle timeout %.0f s)",
            self.location.socket,
            self.location.root,
            os.getpid(),
            timeout,
        )
        try:
            await asyncio.to_thread(engine.warm_up)
        except TurnbackError as error:  # keep serving: captures answer the same error, fast
            logger.warning("first scan failed: %s", error.message)
        logger.info("warm (pid %d): the next capture takes the watcher path", os.getpid())
        watchdog = loop.create_task(self._idle_watch(timeout))
        await self.stop.wait()
        watchdog.cancel()
        unix_server.close()  # no new clients; those asking already get their answers
        await self._answer_what_is_asked(DRAIN_WAIT)
        with contextlib.suppress(OSError):
            if self._reachable():  # never another daemon's
                os.unlink(self.location.socket)
        for open_engine in server.open_engines():
            await asyncio.to_thread(open_engine.close)
        return 0

    async def _answer_what_is_asked(self, wait: float) -> None:
        """Lets the requests under way finish and their answers reach their clients: a
        capture a SIGTERM found running recorded its turn, and a client that lost its answer
        captured again in process (two turns for one prompt)."""
        deadline = time.monotonic() + wait
        while self.writer.routes and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for connection in list(self._open):
            with contextlib.suppress(OSError, ConnectionError):
                await asyncio.wait_for(connection.drain(), max(deadline - time.monotonic(), 0.1))

    async def _initialize(self) -> Any:
        """The server as an editor would leave it after `initialize` on this work tree."""
        uri = workspace_uri(self.location)
        folder = {"uri": uri, "name": os.path.basename(self.location.root)}
        self.server.protocol.set_writer(self.writer)
        self.server.protocol.handle_message(
            {
                "jsonrpc": "2.0",
                "id": "turnback-daemon-initialize",
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": uri,
                    "capabilities": {},
                    "workspaceFolders": [folder],
                },
            }
        )
        engine = await asyncio.to_thread(self.server.engine_for, None)
        if os.path.realpath(engine.ws.state_dir) != os.path.realpath(self.location.state_dir):
            logger.error(
                "the engine keeps this work tree's state in %s, not %s: not serving",
                engine.ws.state_dir,
                self.location.state_dir,
            )
            return None
        return engine

    def _listen(self) -> socket.socket:
        """A new socket in place of whatever is there: we hold the lock, so it is stale."""
        path = self.location.socket
        dir_fd = os.open(self.location.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            with contextlib.suppress(FileNotFoundError):
                try:
                    os.unlink(path)  # stale, or planted by someone else: never trusted
                    logger.info("replaced a stale socket")
                except OSError:
                    if not os.path.isdir(path) or os.path.islink(path):
                        raise
                    # A directory: set aside, never deleted (it may hold someone's files).
                    aside = f"{path}.in-the-way-{int(time.time())}"
                    os.rename(path, aside)
                    logger.warning("moved a directory in the socket's place to %s", aside)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old_umask = os.umask(0o177)
            try:
                listener.bind(socket_address(path, dir_fd))
            finally:
                os.umask(old_umask)
            os.chmod(path, 0o600)
            listener.listen(64)
            return listener
        finally:
            os.close(dir_fd)

    async def _idle_watch(self, timeout: float) -> None:
        while True:
            await asyncio.sleep(min(timeout, 5.0) / 2)
            busy = self.connections or self.writer.routes
            if busy:
                self.last_activity = time.monotonic()
            elif not self._reachable():
                logger.info("the socket was removed or replaced: nobody can reach me, exiting")
                self.stop.set()
                return
            elif time.monotonic() - self.last_activity >= timeout:
                logger.info("idle for %.0f s: exiting", timeout)
                self.stop.set()
                return

    def _reachable(self) -> bool:
        """Whether the socket path still names the socket this daemon bound. Deleting
        turnback's state (`rm -rf .git/turnback`) or a daemon that took over leaves this one
        serving nobody, its lock file gone: it must not keep watching the tree until idle."""
        return self._bound is not None and _identity(self.location.socket) == self._bound

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pid, uid = peer(writer.get_extra_info("socket"))
        if uid != os.getuid():
            logger.warning("refused a connection from uid %d (pid %d)", uid, pid)
            writer.close()
            return
        self.connections += 1
        self._open.add(writer)
        self.last_activity = time.monotonic()
        mux.current.set(writer)  # this task's context: what its requests send goes here
        parser = FrameParser()
        try:
            while chunk := await reader.read(READ_CHUNK):
                for item in parser.feed(chunk):
                    self._handle(item, writer, pid)
        except (ConnectionError, OSError):
            pass
        finally:
            self.connections -= 1
            self._open.discard(writer)
            self.last_activity = time.monotonic()
            self._abandon(writer)
            writer.close()

    def _abandon(self, connection: asyncio.StreamWriter) -> None:
        """Cancels what a client that hung up still waits for: a hook that gave up at its
        deadline said the turn was not recorded, so a capture still queued behind the
        repository lock must not record it later (a turn then stuck "running")."""
        for daemon_id, (asked_on, *_rest) in list(self.writer.routes.items()):
            if asked_on is connection:
                self.server.protocol.cancel_requested(daemon_id)

    def _handle(self, item: bytes | FrameError, writer: asyncio.StreamWriter, pid: int) -> None:
        """One frame: the same answers as `turnback serve`, lifecycle methods excepted."""
        if isinstance(item, FrameError):
            _reply_error(self.server, item.code, item.message)
            return
        try:
            message = json.loads(item)
        except (ValueError, RecursionError) as error:
            _reply_error(self.server, PARSE_ERROR, f"the message body is not JSON: {error}")
            return
        if isinstance(message, dict):
            method = message.get("method")
            logger.info("%s from pid %d", method, pid)
            if method in _LIFECYCLE:  # the daemon's life is its own, not a client's
                if "id" in message:
                    writer.write(mux.frame(_refusal(message["id"], method)))
                return
            self.writer.route(message, writer)
        try:
            self.server.protocol.handle_message(message)
        except Exception as error:
            logger.exception("Unable to handle message")
            self.server.report_server_error(error, JsonRpcException)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


#: Requests a client may not send the daemon: it initialised itself and ends when idle.
_LIFECYCLE = ("initialize", "initialized", "shutdown", "exit")


def _refusal(msg_id: Any, method: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "error": {
            "code": INVALID_REQUEST,
            "message": f"{method} is not accepted: the turnback daemon manages its own life",
        },
    }
