"""`turnback serve --tcp HOST:PORT` speaks the same protocol over a socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers import SERVER_ENV


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _send(conn: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _receive(conn: socket.socket, buffer: bytearray, want_id: int) -> dict:
    """Reads framed messages until the response with `want_id` (skipping notifications)."""
    while True:
        while b"\r\n\r\n" not in buffer:
            buffer += conn.recv(65536)
        header, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        while len(rest) < length:
            rest += conn.recv(65536)
        buffer[:] = rest[length:]
        message = json.loads(rest[:length])
        if message.get("id") == want_id and "method" not in message:
            return message


# Ensures the server answers initialize and a custom request over TCP, and ends on `exit`.
def test_serve_over_tcp(repo: Path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "turnback", "serve", "--tcp", f"127.0.0.1:{port}"],
        env=SERVER_ENV,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP server never listened"
                time.sleep(0.1)
        with conn:
            buffer = bytearray()
            init = {"processId": None, "rootUri": repo.as_uri(), "capabilities": {}}
            _send(conn, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            assert "capabilities" in _receive(conn, buffer, 1)["result"]
            _send(conn, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            capture = {"label": "over tcp", "workspace": repo.as_uri()}
            _send(
                conn, {"jsonrpc": "2.0", "id": 2, "method": "snapshot/capture", "params": capture}
            )
            turn = _receive(conn, buffer, 2)["result"]
            assert (turn["turn"], turn["label"]) == (1, "over tcp")
            # A second connection (a port probe, another editor) is closed at once: it took
            # the first one's answers, and its closing ended the server.
            with socket.create_connection(("127.0.0.1", port), timeout=20) as probe:
                assert probe.recv(65536) == b""  # closed by the server
            _send(conn, {"jsonrpc": "2.0", "id": 4, "method": "snapshot/list", "params": {}})
            assert _receive(conn, buffer, 4)["result"]["turns"][0]["label"] == "over tcp"
            # `shutdown` then `exit` end the server, quietly (no traceback on stderr).
            _send(conn, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            assert _receive(conn, buffer, 3)["result"] is None
            _send(conn, {"jsonrpc": "2.0", "method": "exit"})
            server.wait(timeout=30)
            assert b"Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait(timeout=10)
