"""Paths shown to people the way git shows them: quoted when they hold what a terminal or
a patch tool would take for something else. No imports beyond the standard library: the
command line prints with it on the hook's light path."""

from __future__ import annotations

import re

_C_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}
#: What git quotes in a path it prints: control characters, `"` and `\` (and the C1
#: controls, which some terminals obey as escape sequences, as `\u0080`..`\u009f`).
_NEEDS_QUOTES = re.compile(r'[\x00-\x1f\x7f-\x9f"\\]')


def quoted(name: str) -> str:
    """`name` as git prints a path (core.quotePath=false): in double quotes with C escapes
    when it holds a control character, a double quote or a backslash, else as it is. A
    newline in a name split a diff header in two, and an escape sequence in a name the
    agent made reached the user's terminal as a command."""
    if not _NEEDS_QUOTES.search(name):
        return name
    escaped = _NEEDS_QUOTES.sub(lambda m: _C_ESCAPES.get(m.group(), _escape(m.group())), name)
    return f'"{escaped}"'


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\{code:03o}" if code < 0x80 else f"\\u{code:04x}"
