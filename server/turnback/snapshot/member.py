"""A member of a workspace: a repository inside it, opened with state of its own.

A member's scanner and stat cache are kept apart (keyed by the workspace) from those of a
session opened on that repository directly: the same repository can be a workspace of
its own and a member of another, and the two never share a private index.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from ..core.repository import WorkspaceRepo, common_dir, open_workspace
from ..errors import TurnbackError
from .captured import Snapshot
from .scanner import Scanner


@dataclass
class Member:
    """A repository inside the workspace, at `path` (workspace-relative)."""

    path: str
    ws: WorkspaceRepo
    scanner: Scanner
    #: The member's last snapshot, in its own object database, and its tree's copy state.
    last: Snapshot | None = None
    copied: pygit2.Oid | None = None

    def state(self) -> dict[str, Any]:
        """What a turn records of it: its path, HEAD and head ref (never changed by us)."""
        head = self.ws.head_commit()
        head_hex = str(head) if head else None
        return {"path": self.path, "head": head_hex, "headRef": self.ws.head_name()}


def open_member(workspace: WorkspaceRepo, path: str) -> WorkspaceRepo | None:
    """The repository whose work tree is exactly `path`, with turnback's state for this
    workspace kept apart from a session opened on that repository directly."""
    folder = workspace.root / path
    try:
        ws = open_workspace(folder)
    except TurnbackError:
        return None
    if ws.shadow or ws.root != folder.resolve():
        return None  # a broken `.git`: discovery found an enclosing repository instead
    git_dir = common_dir(Path(ws.repo.path))
    if not all(os.access(d, os.W_OK) for d in (git_dir, git_dir / "objects")):
        # A read-only checkout (a vendored copy, a read-only mount, another user's
        # repository): turnback may keep no state there, and every capture of the whole
        # workspace failed on it. Reported as a nested repository, and never written.
        return None
    key = hashlib.sha256(str(workspace.root).encode()).hexdigest()[:12]
    return dataclasses.replace(
        ws, worktree_key=f"{ws.worktree_key}-in-{key}", state_dir=ws.state_dir / f"in-{key}"
    )
