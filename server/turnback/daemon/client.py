"""The light client: ask a work tree's daemon, or say that none answered.

Imports only the standard library, so a hook's process starts in tens of
milliseconds. `call` returns the result, raises `wire.WireError` when the daemon
answered with an error (the same code, message and data an in-process call
raises), and returns None when no daemon answered: the caller then does the
work in process, as it would without a daemon, and may `start` one for next time.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from .paths import Location, locate, socket_address
from .security import is_own_socket, is_private_dir, peer

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any

#: "off" (or "0"): never use a daemon; "no-start": use a running one, never start one.
DAEMON_ENV = "TURNBACK_DAEMON"
#: Long enough for a capture that waits on another process's restore (the lock's 30 s).
DEFAULT_TIMEOUT = 60.0
_READ_CHUNK = 256 * 1024


def available() -> bool:
    """The daemon needs Unix sockets and SO_PEERCRED (Linux); macOS and Windows, and the
    portable mode that stands in for them (`TURNBACK_PORTABLE=1`), capture in process."""
    if not (hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")):
        return False
    return os.environ.get("TURNBACK_PORTABLE", "") in ("", "0")


def mode() -> str:
    """Whether to use a daemon: "on", "no-start" (use one, never start one) or "off"."""
    if not available():
        return "off"
    value = os.environ.get(DAEMON_ENV, "").strip().lower()
    if value in ("off", "0", "false", "no"):
        return "off"
    return "no-start" if value == "no-start" else "on"


#: Bytes a file URI carries as they are (RFC 3986 unreserved, and the path's slashes).
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


def workspace_uri(location: Location) -> str | None:
    """The root as a file URI (what urllib's quote gives, without importing urllib)."""
    try:
        raw = location.root.encode()
    except UnicodeEncodeError:  # a root whose name is not UTF-8: work in process
        return None
    return "file://" + "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in raw)


def call(
    cwd: str,
    method: str,
    params: dict[str, Any],
    timeout: float = DEFAULT_TIMEOUT,
    messages: list[str] | None = None,
) -> Any | None:
    """The daemon's answer to `method` for the work tree holding `cwd`, or None.

    `params` get the work tree's `workspace`. `window/showMessage` texts the
    daemon sends on the way (an interrupted restore it recovered) go to `messages`.
    """
    if mode() == "off":
        return None
    location = locate(cwd)
    uri = location and workspace_uri(location)
    if location is None or uri is None:
        return None
    sock = _connect(location, timeout)
    if sock is None:
        return None
    with sock:
        request_id = f"{os.getpid()}-{time.monotonic_ns()}"
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                "params": {**params, "workspace": uri},
            }
        ).encode()
        try:
            sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return _answer(sock, request_id, time.monotonic() + timeout, messages)
        except (OSError, ValueError):  # died mid-request, timed out, or spoke nonsense
            return None


def _connect(location: Location, timeout: float) -> socket.socket | None:
    """A connection to the daemon, if a socket of ours is there and a process of ours holds it."""
    try:
        dir_fd = os.open(location.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if not is_private_dir(location.dir, dir_fd) or not is_own_socket(location.socket):
            sock.close()
            return None
        sock.settimeout(timeout)
        sock.connect(socket_address(location.socket, dir_fd))
        _pid, uid = peer(sock)
        if uid != os.getuid():
            sock.close()
            return None
        return sock
    except OSError:  # no daemon there (a stale socket: refused), or it went away
        sock.close()
        return None
    finally:
        os.close(dir_fd)


def _answer(
    sock: socket.socket, request_id: str, deadline: float, messages: list[str] | None
) -> Any | None:
    """Reads frames until the response to `request_id`; notifications on the way are kept."""
    buffer = b""
    while True:
        while b"\r\n\r\n" not in buffer:
            buffer += _read(sock, deadline)
        header, _, buffer = buffer.partition(b"\r\n\r\n")
        length = None
        for line in header.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise ValueError("a frame without Content-Length")
        while len(buffer) < length:
            buffer += _read(sock, deadline)
        message, buffer = json.loads(buffer[:length]), buffer[length:]
        if not isinstance(message, dict):
            continue
        if message.get("method") == "window/showMessage" and messages is not None:
            text = (message.get("params") or {}).get("message")
            if isinstance(text, str):
                messages.append(text)
        if message.get("id") == request_id and "method" not in message:
            error = message.get("error")
            if isinstance(error, dict):
                from ..wire import WireError  # only now: results and wire cost a hook ~7 ms

                raise WireError(
                    int(error.get("code", -32603)), str(error.get("message")), error.get("data")
                )
            return message.get("result")


def _read(sock: socket.socket, deadline: float) -> bytes:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the daemon did not answer in time")
    sock.settimeout(left)
    chunk = sock.recv(_READ_CHUNK)
    if not chunk:
        raise ConnectionError("the daemon closed the connection")
    return chunk


def start(cwd: str) -> bool:
    """Starts the work tree's daemon in the background (it exits at once if one runs)."""
    if mode() != "on":
        return False
    location = locate(cwd)
    if location is None:
        return False
    import subprocess  # only here: the path that runs when no daemon answered

    try:
        subprocess.Popen(
            [sys.executable, "-m", "turnback", "daemon", "-C", location.root],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # never hold the harness's pipes open
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={k: v for k, v in os.environ.items() if k != "TURNBACK_FAULT_AFTER"},
            start_new_session=True,  # no signal from the hook's terminal or process group
            close_fds=True,
        )
    except OSError:
        return False
    return True
