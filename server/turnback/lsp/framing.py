"""Splits the LSP byte stream into message bodies, and survives any junk in it.

pygls's own reader accepts only a line that is exactly `Content-Length: N\\r\\n`,
trusts N blindly and drops a body that is not JSON without a word: one broken
frame leaves the server deaf for good, and a huge N kills it. This parser is
sans-IO (bytes in, events out) so both transports and the tests share it:

- header names are matched case-insensitively, `\\n` alone ends a line too,
  and a `Content-Length` header is found even when the bytes left over from a
  broken frame are glued in front of it, so the stream resynchronises at the
  next well-formed header;
- a length over `MAX_MESSAGE_BYTES`, a length that is not a number and a
  header block without a length become `FrameError`s the server answers
  (id null) instead of waiting, allocating, or going quiet;
- junk between frames is held to `MAX_HEADER_BYTES` while the parser looks
  for the next line, so a stream of garbage cannot grow memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The largest message body accepted. A real LSP message (a didOpen of a large
#: file) stays far below it; past it the length is a bug or an attack.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: How much header (or junk between frames) is held while waiting for a line end.
MAX_HEADER_BYTES = 64 * 1024
#: A tail kept when junk is dropped, so a header split across reads is not lost.
_KEEP_TAIL = 256

_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*$", re.IGNORECASE)


@dataclass(frozen=True)
class FrameError:
    """The stream held something that is not a frame; `code` is the JSON-RPC error."""

    code: int
    message: str


PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class FrameParser:
    """Feed it bytes as they arrive; it returns complete bodies and framing errors."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None  # set while a body is being read
        self._header_length: int | None = None
        self._in_headers = False  # a header line has been seen since the last frame
        #: An error was reported: stay quiet until the next valid Content-Length, so the
        #: rest of a broken frame (blank lines in its body) gets no further errors.
        self._resyncing = False

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        self._buffer += data
        out: list[bytes | FrameError] = []
        while True:
            if self._length is not None:
                if len(self._buffer) < self._length:
                    return out
                out.append(bytes(self._buffer[: self._length]))
                del self._buffer[: self._length]
                self._length = None
                continue
            end = self._buffer.find(b"\n")
            if end < 0:
                self._bound_junk()
                return out
            line = bytes(self._buffer[:end]).rstrip(b"\r")
            del self._buffer[: end + 1]
            error = self._header_line(line)
            if error is not None:
                out.append(error)

    def _bound_junk(self) -> None:
        if len(self._buffer) > MAX_HEADER_BYTES:
            del self._buffer[:-_KEEP_TAIL]
            self._in_headers = True  # what was dropped belonged to no frame

    def _header_line(self, line: bytes) -> FrameError | None:
        if not line:
            return self._end_of_headers()
        self._in_headers = True
        match = _CONTENT_LENGTH.search(line)
        if match is None:
            return None  # another header (Content-Type), or junk: wait for a length
        value = match.group(1)
        if not value.isdigit():
            return self._fail(PARSE_ERROR, f"Content-Length is not a number: {_show(value)}")
        length = int(value) if len(value) <= 18 else MAX_MESSAGE_BYTES + 1
        if length > MAX_MESSAGE_BYTES:
            return self._fail(
                INVALID_REQUEST,
                f"Content-Length {_show(value)} is over the limit of {MAX_MESSAGE_BYTES} bytes",
            )
        self._header_length = length
        self._resyncing = False
        return None

    def _end_of_headers(self) -> FrameError | None:
        length, seen = self._header_length, self._in_headers
        self._header_length, self._in_headers = None, False
        if length is not None:
            self._length = length
            return None
        if seen and not self._resyncing:
            return self._fail(PARSE_ERROR, "a header block without a Content-Length header")
        return None  # a blank line between frames, or more of what was already reported

    def _fail(self, code: int, message: str) -> FrameError:
        self._header_length = None
        self._resyncing = True
        return FrameError(code, message)


def _show(value: bytes) -> str:
    return repr(value[:40].decode("utf-8", "replace"))
