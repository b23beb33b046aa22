"""Whether the operation a command line runs passed its commit point before an interrupt.

A Ctrl-C or SIGTERM before the timeline's ref moves leaves nothing done (a restore rolls
back); one after it leaves the operation done, its answer unprinted. The command line
said "interrupted" for both, and a user who ran the undo again undid a second turn. Each
operation notes here, before its commit point, how to tell whether it landed (its
session's ref names the prepared commit); the command line asks after an interrupt.
"""

from __future__ import annotations

from collections.abc import Callable

#: The operation whose commit point is under way or passed, and how to tell if it landed.
_noted: list[tuple[str, Callable[[], bool]]] = []


def reaching(operation: str, landed: Callable[[], bool]) -> None:
    """Notes that `operation` is about to pass its commit point (`landed` tells if it did)."""
    _noted[:] = [(operation, landed)]


def landed() -> str | None:
    """The operation that passed its commit point, if the last one noted did; else None."""
    if not _noted:
        return None
    operation, check = _noted[0]
    try:
        return operation if check() else None
    except Exception:  # the repository cannot be read now: not known to have landed
        return None
