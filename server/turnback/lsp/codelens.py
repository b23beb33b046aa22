"""Code lenses on the hunks the newest agent turn changed, and reverting one hunk.

Hunks are computed between the turn's snapshot of the file and the text the
editor holds now, so lenses sit on the right lines even while the user types.
Reverting a hunk is a text edit sent through `workspace/applyEdit`, so it
lands on the editor's own undo stack.
"""

from __future__ import annotations

from lsprotocol import types

from ..diff.textdiff import diff_file
from ..results import Hunk, Turn
from ..wire import hunk as hunk_to_wire

UNDO = "turnback.undo"
REDO = "turnback.redo"
REVERT_HUNK = "turnback.revertHunk"
SHOW_DIFF = "turnback.showDiff"
CAPTURE = "turnback.capture"


def hunks(
    path: str, before: bytes | None, text: str, on_disk: bytes | None = None
) -> tuple[Hunk, ...]:
    """The hunks from the snapshot's bytes to the editor's text; none when those bytes are
    not UTF-8 (a Latin-1 file): the editor's text is decoded from them in an encoding the
    server does not know, so no line could be compared, nor put back, byte for byte.
    `on_disk`: the file as saved now, which tells whether the editor converts (`as_held`)."""
    if not is_utf8(before):
        return ()
    return diff_file(path, as_held(before, text, on_disk), text.encode(), context=0).hunks


def as_held(data: bytes | None, text: str, on_disk: bytes | None) -> bytes:
    """`data` as an editor holding `text` holds a file: without its BOM, and with `\n` for
    `\r\n`, where the file on disk has them and the editor's text shows neither (Emacs,
    and clients like it, convert both on reading and back on saving). Compared as they
    are, every line of a CRLF file differed, and reverting a hunk put `\r\r\n` and a
    second BOM in the saved file. A file that is LF on disk is not converted: a turn that
    changed its line endings, or took its BOM away, still shows."""
    return converted(data, *conversions(text, on_disk))


def conversions(text: str, on_disk: bytes | None) -> tuple[bool, bool]:
    """Whether an editor holding `text` for the file `on_disk` dropped its BOM (VS Code
    does too), and its `\r` (Emacs)."""
    if on_disk is None:
        return False, False
    return (
        on_disk.startswith(_BOM) and not text.startswith("\ufeff"),
        b"\r\n" in on_disk and "\r" not in text,
    )


def converted(data: bytes | None, bom: bool, crlf: bool) -> bytes:
    data = data or b""
    if bom:
        data = data.removeprefix(_BOM)
    if crlf:
        data = data.replace(b"\r\n", b"\n")
    return data


_BOM = "\ufeff".encode()


def is_utf8(data: bytes | None) -> bool:
    """Whether a snapshot's bytes are text the editor's text can be compared with."""
    try:
        (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines(text: str) -> list[str]:
    """Lines as the diff splits them: at `\n` only, ends kept (`str.splitlines` also ends
    lines at form feeds, U+2028 and lone `\r`, which shifted every hunk below one)."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _column(text: str, encoding: str) -> int:
    """`text`'s length in the position encoding the client and server agreed on."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class _Positions:
    """LSP positions of the diff's lines. LSP ends a line at `\n`, `\r\n` and a lone
    `\r`, the diff at `\n` only, so a lone `\r` above a hunk moves its LSP line."""

    def __init__(self, lines: list[str], encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.lines = lines
        self.encoding = encoding
        self._starts: list[int] = []  # the LSP line each diff line starts on
        at = 0
        for line in lines:
            self._starts.append(at)
            at += line.count("\r") - line.endswith("\r\n") + line.endswith("\n")
        self._count = at  # LSP line breaks in the whole text

    def line(self, index: int) -> int:
        """The LSP line where diff line `index` starts (past the end: the last one)."""
        if index < len(self._starts):
            return self._starts[index]
        return max(self._count - (not self.lines or self.lines[-1].endswith("\n")), 0)

    def at(self, index: int) -> types.Position:
        """The position where diff line `index` starts, or the end of the text past it."""
        if index < len(self.lines):
            return types.Position(self._starts[index], 0)
        tail = self.lines[-1] if self.lines else ""
        if not tail or tail.endswith("\n"):
            return types.Position(self._count, 0)
        after_break = max(tail.rfind("\r"), -1) + 1  # a lone \r ends an LSP line too
        return types.Position(self._count, _column(tail[after_break:], self.encoding))


def hunk_line(hunk: Hunk, line_count: int) -> int:
    """0-based line where a hunk's lens goes (the line after a pure deletion)."""
    line = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
    return max(0, min(line, max(line_count - 1, 0)))


def lenses(
    uri: str,
    path: str,
    before: bytes | None,
    text: str,
    turn: Turn,
    workspace: str,
    on_disk: bytes | None = None,
) -> list[types.CodeLens]:
    out: list[types.CodeLens] = []
    found = hunks(path, before, text, on_disk)
    if not found:
        return out
    positions = _Positions(_lines(text))
    count = len(positions.lines)
    target = {"workspace": workspace, "session": turn.session}
    for hunk in found:
        line = positions.line(hunk_line(hunk, count))
        where = types.Range(types.Position(line, 0), types.Position(line, 0))
        revert = {"uri": uri, "turn": turn.id, **hunk_to_wire(hunk), **target}
        for title, command, args in (
            (f"Agent turn {turn.number}", SHOW_DIFF, {**target, "turn": turn.id}),
            ("Undo turn", UNDO, {**target, "turn": turn.id}),
            ("Revert hunk", REVERT_HUNK, revert),
            ("Show diff", SHOW_DIFF, {**target, "turn": turn.id, "path": path}),
        ):
            out.append(
                types.CodeLens(
                    range=where,
                    command=types.Command(title=title, command=command, arguments=[args]),
                )
            )
    return out


def revert_edit(
    path: str,
    before: bytes | None,
    text: str,
    old_start: int,
    old_lines: int,
    encoding: str = types.PositionEncodingKind.Utf16,
    on_disk: bytes | None = None,
) -> types.TextEdit | None:
    """The edit that puts back the snapshot's lines for the hunk at `old_start`, now, its
    columns in the position `encoding` the client agreed to."""
    current = next(
        (
            h
            for h in hunks(path, before, text, on_disk)
            if (h.old_start, h.old_lines) == (old_start, old_lines)
        ),
        None,
    )
    if current is None:
        return None
    old_text = (
        "".join(
            _lines(as_held(before, text, on_disk).decode())[
                max(old_start - 1, 0) : max(old_start - 1, 0) + old_lines
            ]
        )
        if old_lines
        else ""
    )
    positions = _Positions(_lines(text), encoding)
    lines = positions.lines
    if current.new_lines:
        start = positions.at(current.new_start - 1)
        end = positions.at(current.new_start - 1 + current.new_lines)
    else:
        start = end = positions.at(current.new_start)
        if current.new_start >= len(lines) and lines and not lines[-1].endswith("\n"):
            old_text = "\n" + old_text.rstrip("\n")
    return types.TextEdit(range=types.Range(start, end), new_text=old_text)
