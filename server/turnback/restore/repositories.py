"""What happened to the workspace's repositories since a turn began, for an undo to say.

An undo puts files back; it never moves a repository's HEAD, branches, index, stash or
config, never removes a repository the turn created, and cannot bring back a `.git`
the turn deleted. Each of these is said plainly, per repository, in the result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import HeadMoved, RepositoryChange
from ..snapshot.members import WorkspaceScanner

HEAD_MOVED = "headMoved"
CREATED = "created"
DELETED = "deleted"
#: Kept reason: a repository the undone turns created stays whole, `.git` and files.
REPOSITORY_CREATED = "repositoryCreated"


@dataclass
class RepositoryNotes:
    """Per-repository changes since the oldest undone turn began."""

    changes: list[RepositoryChange] = field(default_factory=list)
    #: Member repositories that did not exist when the turn began: never touched.
    created: list[str] = field(default_factory=list)

    def message(self) -> str:
        """Sentences appended to the undo's message."""
        return "".join(f". {note.message}" for note in self.changes)


def _short(head: str | None) -> str:
    return (head or "unborn")[:10]


def repository_notes(
    scanner: WorkspaceScanner, root: Path, recorded: list[dict[str, Any]] | None, turn: int
) -> RepositoryNotes:
    """Compares the members recorded at the start of turn `turn` with the members now."""
    scanner.load()
    notes = RepositoryNotes()
    before = {r["path"]: r for r in recorded or []}
    now = scanner.members
    # Turns recorded before workspaces held repositories know none: every member is new.
    notes.created = sorted(p for p in now if p not in before)
    if recorded is not None:
        for path in notes.created:
            notes.changes.append(
                RepositoryChange(
                    path,
                    CREATED,
                    f"Repository {path} was created during the turns: left in place, with "
                    "its history",
                )
            )
    for path, record in sorted(before.items()):
        if path not in now:
            if not os.path.lexists(root / path / ".git"):
                notes.changes.append(
                    RepositoryChange(
                        path,
                        DELETED,
                        f"Repository {path} is gone from there since the turns began "
                        "(deleted, moved, or a submodule deinitialized): its files as the "
                        "turn found them were put back; its .git (commits, branches, stash, "
                        "config) is not turnback's to bring back, and stays wherever it went",
                    )
                )
            continue
        head = now[path].state()["head"]
        if head != record.get("head"):
            notes.changes.append(
                RepositoryChange(
                    path,
                    HEAD_MOVED,
                    f"Note: HEAD of {path} moved since turn {turn} "
                    f"({_short(record.get('head'))} → {_short(head)}); turnback restored "
                    "files only and left its HEAD and branches alone",
                    heads=HeadMoved(record.get("head"), head),
                )
            )
    return notes


def is_held(path: str, created: list[str]) -> str | None:
    """The created repository holding `path`, if any."""
    return next((c for c in created if path.startswith(c + "/")), None)
