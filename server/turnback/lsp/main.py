"""Starts the language server over stdio or TCP."""

from __future__ import annotations

import logging
import sys

from pygls.exceptions import JsonRpcException

from ..core import memory
from ..errors import InvalidParams
from ..wire import INTERNAL_ERROR


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


#: The CLI's exit codes for a server that cannot start: refused, bad input.
EXIT_FAILED, EXIT_USAGE = 1, 2


def serve(tcp: str | None = None, log_file: str | None = None) -> int:
    """Serves until `exit` or the end of the stream; returns the process's exit code.

    Options that cannot work (a bad address, a log file that cannot be written) and a
    port already in use end in one line on stderr, never a traceback.
    """
    try:
        return _serve(tcp, log_file)
    except InvalidParams as error:
        print(f"turnback: {error.message}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:  # the address is in use or not ours to bind
        print(f"turnback: {error.strerror or error}", file=sys.stderr)
        return EXIT_FAILED


def _serve(tcp: str | None, log_file: str | None) -> int:
    address = _address(tcp) if tcp else None
    try:
        logging.basicConfig(
            filename=log_file,
            level=logging.INFO if log_file else logging.WARNING,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    except OSError as error:
        raise InvalidParams(
            "log-file", f"cannot be written ({error.strerror}): {log_file}"
        ) from None
    quiet_expected_errors()
    memory.tune_heap()  # before the server's pool threads exist
    from .server import create_server
    from .transport import start_io, start_tcp

    server = create_server()
    if address:
        start_tcp(server, *address)
        return 0
    return start_io(server)


def _address(tcp: str) -> tuple[str, int]:
    host, _, port = tcp.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidParams("tcp", f"expects HOST:PORT, got {tcp!r}")
    return host, int(port)
