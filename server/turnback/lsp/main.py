"""Starts the language server over stdio or TCP."""

from __future__ import annotations

import logging


def serve(tcp: str | None = None, log_file: str | None = None) -> int:
    logging.basicConfig(
        filename=log_file,
        level=logging.INFO if log_file else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from .server import server

    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"turnback: --tcp expects HOST:PORT, got {tcp!r}")
        server.start_tcp(host, int(port))
    else:
        server.start_io()
    return 0
