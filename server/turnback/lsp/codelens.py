"""Code lenses on the hunks the newest agent turn changed, and reverting one hunk.

Hunks are computed between the turn's snapshot of the file and the text the
editor holds now, so lenses sit on the right lines even while the user types.
Reverting a hunk is a text edit sent through `workspace/applyEdit`, so it
lands on the editor's own undo stack.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from ..diff.textdiff import Hunk, diff_file

UNDO = "turnback.undo"
REDO = "turnback.redo"
REVERT_HUNK = "turnback.revertHunk"
SHOW_DIFF = "turnback.showDiff"
CAPTURE = "turnback.capture"


def hunks(path: str, before: bytes | None, text: str) -> tuple[Hunk, ...]:
    return diff_file(path, before, text.encode(), context=0).hunks


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def hunk_line(hunk: Hunk, line_count: int) -> int:
    """0-based line where a hunk's lens goes (the line after a pure deletion)."""
    line = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
    return max(0, min(line, max(line_count - 1, 0)))


def lenses(
    uri: str, path: str, before: bytes | None, text: str, turn: dict[str, Any], workspace: str
) -> list[types.CodeLens]:
    out: list[types.CodeLens] = []
    count = len(_lines(text))
    target = {"workspace": workspace, "session": turn["session"]}
    for hunk in hunks(path, before, text):
        line = hunk_line(hunk, count)
        where = types.Range(types.Position(line, 0), types.Position(line, 0))
        revert = {"uri": uri, "turn": turn["id"], **hunk.to_json(), **target}
        for title, command, args in (
            (f"Agent turn {turn['turn']}", SHOW_DIFF, {**target, "turn": turn["id"]}),
            ("Undo turn", UNDO, {**target, "turn": turn["id"]}),
            ("Revert hunk", REVERT_HUNK, revert),
            ("Show diff", SHOW_DIFF, {**target, "turn": turn["id"], "path": path}),
        ):
            out.append(
                types.CodeLens(
                    range=where,
                    command=types.Command(title=title, command=command, arguments=[args]),
                )
            )
    return out


def revert_edit(
    path: str, before: bytes | None, text: str, old_start: int, old_lines: int
) -> types.TextEdit | None:
    """The edit that puts back the snapshot's lines for the hunk at `old_start`, now."""
    current = next(
        (
            h
            for h in hunks(path, before, text)
            if (h.old_start, h.old_lines) == (old_start, old_lines)
        ),
        None,
    )
    if current is None:
        return None
    old_text = (
        "".join(
            _lines((before or b"").decode(errors="replace"))[
                max(old_start - 1, 0) : max(old_start - 1, 0) + old_lines
            ]
        )
        if old_lines
        else ""
    )
    lines = _lines(text)
    end_of_doc = types.Position(
        max(len(lines) - 1, 0), _utf16_len(lines[-1].rstrip("\r\n")) if lines else 0
    )
    if lines and lines[-1].endswith("\n"):
        end_of_doc = types.Position(len(lines), 0)

    def position(line: int) -> types.Position:
        return types.Position(line, 0) if line < len(lines) else end_of_doc

    if current.new_lines:
        start = position(current.new_start - 1)
        end = position(current.new_start - 1 + current.new_lines)
    else:
        start = end = position(current.new_start)
        if current.new_start >= len(lines) and lines and not lines[-1].endswith("\n"):
            old_text = "\n" + old_text.rstrip("\n")
    return types.TextEdit(range=types.Range(start, end), new_text=old_text)
