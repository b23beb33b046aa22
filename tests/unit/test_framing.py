"""The frame parser on its own: every way a stream can be cut, glued or padded.

The server-level checks (answers, staying up) are in reliability/test_hostile.py.
"""

from __future__ import annotations

from turnback.lsp.framing import (
    INVALID_REQUEST,
    MAX_HEADER_BYTES,
    MAX_MESSAGE_BYTES,
    PARSE_ERROR,
    FrameError,
    FrameParser,
)


def frame(body: bytes, header: bytes = b"Content-Length") -> bytes:
    return header + b": %d\r\n\r\n" % len(body) + body


def feed_all(*chunks: bytes) -> list:
    parser = FrameParser()
    out: list = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out


def codes(items: list) -> list:
    return [i.code if isinstance(i, FrameError) else i for i in items]


# Ensures frames come out whole whatever the read boundaries, even one byte at a time.
def test_frames_split_at_every_byte():
    stream = frame(b'{"a": 1}') + frame(b'{"b": 2}')
    assert feed_all(*(stream[i : i + 1] for i in range(len(stream)))) == [b'{"a": 1}', b'{"b": 2}']
    assert feed_all(stream) == [b'{"a": 1}', b'{"b": 2}']


# Ensures the header name is case-insensitive, LF alone ends lines, and other headers pass.
def test_lenient_headers():
    stream = (
        b"content-length:3\n\n[1]"
        + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        + frame(b"[2]", b"CONTENT-LENGTH ")
    )
    assert feed_all(stream) == [b"[1]", b"[2]"]


# Ensures a length that is not a number is an error and the next frame is still read.
def test_length_not_a_number_then_resync():
    out = feed_all(b"Content-Length: abc\r\n\r\n{}" + frame(b"{}"))
    assert codes(out) == [PARSE_ERROR, b"{}"]


# Ensures a header block with no length is one error, and the junk glued after it to the
# next header does not hide that header.
def test_missing_length_then_resync():
    out = feed_all(b"Content-Type: x\r\n\r\n{}" + frame(b"[3]"))
    assert codes(out) == [PARSE_ERROR, b"[3]"]


# Ensures a length shorter than the body yields the cut body, then the next frame.
def test_short_length_then_resync():
    out = feed_all(b"Content-Length: 3\r\n\r\n[1, 2, 3]" + frame(b"[4]"))
    assert out == [b"[1,", b"[4]"]


# Ensures a length over the limit is refused at once (never allocated or waited for).
def test_huge_lengths_refused():
    for length in (MAX_MESSAGE_BYTES + 1, 10**12, 2**63, int("9" * 400)):
        out = feed_all(b"Content-Length: %d\r\n\r\n{}" % length + frame(b"[5]"))
        assert codes(out) == [INVALID_REQUEST, b"[5]"], length


# Ensures a stream of junk with no line end is held to a bound, and a header after it works.
def test_junk_is_bounded():
    parser = FrameParser()
    for _ in range(100):
        assert parser.feed(b"x" * 10_000) == []
        assert len(parser._buffer) <= MAX_HEADER_BYTES + 10_000
    assert codes(parser.feed(b"\r\n\r\n" + frame(b"[6]"))) == [PARSE_ERROR, b"[6]"]


# Ensures blank lines between frames are not mistaken for a header block.
def test_blank_lines_between_frames():
    assert feed_all(b"\r\n\r\n" + frame(b"[7]") + b"\r\n" + frame(b"[8]")) == [b"[7]", b"[8]"]


# Ensures one refused frame gets one error, even when its unread body holds blank lines.
def test_one_error_for_a_refused_frame_with_blank_lines():
    body = b'{\n\n  "a": 1\n\n}'
    out = feed_all(b"Content-Length: %d\r\n\r\n" % (MAX_MESSAGE_BYTES + 1) + body + frame(b"[9]"))
    assert codes(out) == [INVALID_REQUEST, b"[9]"]
