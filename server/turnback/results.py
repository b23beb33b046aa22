"""What the engine returns: plain dataclasses with snake_case fields, no wire shapes.

The fronts turn these into protocol.md's JSON in one place (`wire.py`); nothing here
knows camelCase, URIs or JSON-RPC. Field order follows the protocol's, so a reader can
hold the two side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ---- turns ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SkippedPath:
    """A path a capture left out, and why (too large, a submodule, a FIFO, ...)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ChangedFile:
    """A file a turn changed, without its line diff (`list` with files)."""

    path: str
    old_path: str | None
    status: str  # "added" | "modified" | "deleted" | "renamed"


@dataclass(frozen=True)
class RepositoryState:
    """A repository below the work tree that a turn covers, as a capture found it."""

    path: str
    head: str | None
    head_ref: str | None


@dataclass
class Turn:
    """One turn of a session, as every result shows it."""

    id: str
    session: str
    number: int
    label: str
    created_at: str
    state: str  # "active" | "undone"
    sealed: bool
    metadata: Any
    #: What the capture that made the turn's end state left out (see `skipped_before`).
    skipped: list[SkippedPath]
    sealed_at: str | None = None
    #: Once sealed: what the "before" capture left out (`skipped` is then the "after" one's).
    skipped_before: list[SkippedPath] | None = None
    #: The member repositories at the "before" capture (empty: none).
    repositories: list[RepositoryState] | None = None
    #: `list` with files only: what the turn changed.
    files: list[ChangedFile] | None = None
    #: `list` only: "running", "interrupted", "sealed" or "open" (history/running.py).
    progress: str | None = None


@dataclass(frozen=True)
class RunningTurn:
    """The turn an agent is still running, and how recently it changed the work tree."""

    session: str
    turn: int
    id: str
    harness: str
    harness_session: str
    last_change_at: str
    seconds_since_change: float
    quiet_period: int


@dataclass(frozen=True)
class Rescued:
    """A rescued version: files a forced restore (or a rescue) overwrote, kept."""

    id: str
    created_at: str
    reason: str
    files: list[str]


@dataclass(frozen=True)
class SessionInfo:
    id: str
    turns: int
    updated_at: str


@dataclass
class ListResult:
    session: str
    work_tree: Path
    turns: list[Turn]
    running: RunningTurn | None
    #: Another session's turn running in the same work tree: this session's undo or redo
    #: waits for it (history/running.py, `running_elsewhere`).
    running_elsewhere: RunningTurn | None
    can_undo: bool
    can_redo: bool
    rescued: list[Rescued]
    sessions: list[SessionInfo]


# ---- restores ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileAction:
    """A file a restore wrote: "modified", "created" or "deleted"."""

    path: str
    action: str


@dataclass(frozen=True)
class KeptFile:
    """A file a restore left as it is, and why."""

    path: str
    reason: str
    #: For "blocked": the file or symlink standing where a directory must be.
    by: str | None = None


@dataclass(frozen=True)
class HeadMoved:
    old_head: str | None
    new_head: str | None


@dataclass(frozen=True)
class RepositoryChange:
    """What happened to one of the workspace's repositories since an undone turn began."""

    path: str
    change: str  # "headMoved" | "created" | "deleted"
    message: str
    #: For "headMoved": where HEAD was and is.
    heads: HeadMoved | None = None


@dataclass(frozen=True)
class AgentHint:
    """How to roll the agent's conversation back to match the undone files."""

    harness: str
    prompt: str
    message: str
    session_id: str | None = None


@dataclass
class RestoreResult:
    """What an undo or redo did (or, dry, would do)."""

    operation: str  # "undo" | "redo"
    count: int
    turns: list[Turn]
    files: list[FileAction]
    kept: list[KeptFile]
    message: str
    dry_run: bool
    head_moved: HeadMoved | None = None
    repository_changes: list[RepositoryChange] | None = None
    agent_hint: AgentHint | None = None
    #: A forced restore's overwritten files, kept as this rescued version.
    rescued: Rescued | None = None
    #: What the state restored to had, its capture left out (no snapshot held it), and
    #: is gone from the work tree now.
    not_restored: list[SkippedPath] | None = None


@dataclass
class RescueResult:
    session: str
    rescued: Rescued
    files: list[FileAction]
    kept: list[KeptFile]
    replaced: Rescued | None
    message: str
    dry_run: bool


# ---- diffs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` block; numbers follow git's header convention (see diff/textdiff.py)."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass(frozen=True)
class FileDiff:
    """Everything a client needs to show one file's change, including the unified text."""

    path: str
    old_path: str | None
    status: str  # "added" | "modified" | "deleted" | "renamed"
    binary: bool
    additions: int
    deletions: int
    hunks: tuple[Hunk, ...]
    diff: str  # unified diff text ("" for binary or truncated)
    truncated: bool = False  # True when the file was too large to diff line by line
    #: Both sides' modes, where the turn changed them (`chmod +x`): else None.
    old_mode: int | None = None
    new_mode: int | None = None


@dataclass
class DiffResult:
    turn: Turn
    work_tree: Path
    files: list[FileDiff]


@dataclass(frozen=True)
class FileContent:
    """One side of a file for a diff view: its text, or flags saying why there is none."""

    path: str
    side: str  # "before" | "after"
    turn_id: str
    work_tree: Path
    exists: bool
    binary: bool
    text: str
    size: int | None = None
    too_large: bool = False


# ---- prune ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemovedTurn:
    session: str
    turn: int
    id: str


@dataclass(frozen=True)
class RemovedRescued:
    session: str
    id: str


@dataclass
class PruneResult:
    removed_turns: list[RemovedTurn] = field(default_factory=list)
    removed_rescued: list[RemovedRescued] = field(default_factory=list)
    removed_sessions: list[str] = field(default_factory=list)
    message: str = ""
