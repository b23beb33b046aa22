"""Starts the language server over stdio or TCP."""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException

from ..errors import INTERNAL_ERROR


class _ExpectedErrors(logging.Filter):
    """Drops pygls's tracebacks for errors we answer on purpose (a conflict, bad params).

    Internal errors (-32603) and anything that is not a JSON-RPC error stay in the log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, JsonRpcException) and error.code != INTERNAL_ERROR)


def quiet_expected_errors() -> None:
    """Keeps the log for what needs a look (`turnback serve` and `turnback daemon`)."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedErrors())


def serve(tcp: str | None = None, log_file: str | None = None) -> int:
    logging.basicConfig(
        filename=log_file,
        level=logging.INFO if log_file else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    quiet_expected_errors()
    from .server import server
    from .transport import start_io, start_tcp

    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"turnback: --tcp expects HOST:PORT, got {tcp!r}")
        start_tcp(server, host, int(port))
    else:
        start_io(server)
    return 0
