"""One error type for the engine, with structured variants that carry a reason.

The engine raises these with a `Reason` and snake_case `details`; it knows no wire
codes. The fronts map a reason to what they speak from one table each: `wire.py`
to JSON-RPC codes and `data` (the LSP server, the daemon, the CLI's `--json`), `cli.py`
to exit codes.
"""

from __future__ import annotations

import errno
import os
import re
from enum import Enum

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any


class Reason(str, Enum):
    """Why an operation did not happen; the failures' values are protocol.md's `data.reason`."""

    #: A parameter has the wrong type or value.
    INVALID_PARAMS = "invalidParams"
    #: The caller cancelled before anything was committed.
    CANCELLED = "cancelled"
    #: A bug; answered without a traceback.
    INTERNAL = "internal"
    #: A well-formed request that could not be carried out (the variants below say why).
    FAILED = "failed"
    CONFLICT = "conflict"
    NO_OPEN_TURN = "noOpenTurn"
    NO_WORKSPACE = "noWorkspace"
    BUSY = "busy"
    WORKSPACE_TOO_LARGE = "workspaceTooLarge"
    WORK_TREE_CHANGING = "workTreeChanging"
    UNSUPPORTED_REPOSITORY = "unsupportedRepository"
    RESTORE_FAILED = "restoreFailed"
    STORAGE_FAILED = "storageFailed"
    TURN_RUNNING = "turnRunning"


class TurnbackError(Exception):
    """Base of every error the engine reports to a user."""

    reason: Reason = Reason.INTERNAL

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        #: Facts a front passes on (a conflict's files, a failed write's path), snake_case.
        self.details: dict[str, Any] = details


class InvalidParams(TurnbackError):
    """A parameter has the wrong type or value; the message names the field."""

    reason = Reason.INVALID_PARAMS

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"Invalid parameter '{field}': {problem}")
        self.field = field
        self.problem = problem


class RequestFailed(TurnbackError):
    """A well-formed request that cannot be carried out; `reason` is documented."""

    reason = Reason.FAILED


class Conflict(RequestFailed):
    """Files the restore would change were edited after the state it expects."""

    reason = Reason.CONFLICT

    def __init__(
        self,
        files: list[str],
        operation: str,
        unsaved: frozenset[str] = frozenset(),
        others: dict[str, str] | None = None,
    ) -> None:
        back = "redo" if operation == "undo" else "rescue"  # both keep what force overwrites
        others = {f: by for f, by in (others or {}).items() if f in files and f not in unsaved}
        saved = [f for f in files if f not in unsaved and f not in others]
        what = []
        if saved:
            what.append(f"changes made after the turn: {_listed(saved)}")
        if others:
            named = [f"{f} (session '{by}')" for f, by in sorted(others.items())]
            what.append(
                "changes made while another session's turn also ran, which may be that "
                f"session's: {_listed(named)}"
            )
        if unsaved:
            what.append(f"unsaved changes in the editor: {_listed(sorted(unsaved))}")
        kept = "what was on disk" if unsaved else "them"  # an editor's text is the editor's
        super().__init__(
            f"{operation.capitalize()} would overwrite {'; and '.join(what)}. Retry with force "
            f"to overwrite them ({back} can bring {kept} back).",
            files=files,
        )


def _listed(files: list[str]) -> str:
    return ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")


class NoOpenTurn(RequestFailed):
    """An "after" capture with no active turn to seal."""

    reason = Reason.NO_OPEN_TURN

    def __init__(
        self,
        session: str,
        undone_turn: int | None = None,
        not_newest: object = None,
        exists: bool = True,
    ) -> None:
        # An id is quoted: the string "1" names no turn number 1 (as undo says too).
        named = f"'{not_newest}'" if isinstance(not_newest, str) else str(not_newest)
        if not_newest is not None and not exists:
            message = (
                f"No turn {named} in session '{session}' (never made, or undone and "
                "dropped when a later turn began). Nothing was recorded."
            )
        elif not_newest is not None:
            message = (
                f"Turn {named} is not the newest active turn of session '{session}' "
                "(it was undone, or a later turn began): only the newest is sealed by an "
                '"after" capture. Nothing was recorded.'
            )
        elif undone_turn is not None:
            message = (
                f"Turn {undone_turn}, the newest in session '{session}', was undone: an "
                '"after" capture belongs to it, and no older turn is sealed in its place. '
                "Nothing was recorded."
            )
        else:
            message = (
                f"No active turn in session '{session}' to record an \"after\" capture for; "
                'capture with phase "before" first.'
            )
        super().__init__(message, session=session)


class NoWorkspace(RequestFailed):
    """The request names no usable workspace folder."""

    reason = Reason.NO_WORKSPACE


class Busy(RequestFailed):
    """Another process held the repository's lock for too long."""

    reason = Reason.BUSY


class WorkspaceTooLarge(RequestFailed):
    """The work tree exceeds a documented safety limit, so nothing was captured."""

    reason = Reason.WORKSPACE_TOO_LARGE


class WorkTreeChanging(RequestFailed):
    """Files kept changing while they were being read, so no consistent snapshot exists."""

    reason = Reason.WORK_TREE_CHANGING


class UnsupportedRepository(RequestFailed):
    """The repository uses a git feature libgit2 cannot read (a sparse index, say)."""

    reason = Reason.UNSUPPORTED_REPOSITORY


class RestoreFailed(RequestFailed):
    """Writing files failed midway; what was written has been rolled back."""

    reason = Reason.RESTORE_FAILED


class StorageFailed(RequestFailed):
    """The file system refused what turnback needed (a full disk, a read-only mount,
    permissions on `.git`): the user's to fix, not a bug."""

    reason = Reason.STORAGE_FAILED

    @classmethod
    def from_os_error(cls, error: OSError) -> StorageFailed:
        cause = error.strerror or str(error)
        where = f" ({os.fsdecode(error.filename)})" if error.filename is not None else ""
        if error.errno in (errno.EMFILE, errno.ENFILE) or "open files" in cause:  # (libgit2's)
            fix = "raise the limit on open files (`ulimit -n`)"
        else:
            fix = "free some space or fix the permissions"
        return cls.refused(f"{cause}{where}", fix)

    @classmethod
    def refused(cls, what: str, fix: str = "fix the permissions") -> StorageFailed:
        """The file system's refusal `what`, and what the user can do about it."""
        return cls(
            f"The file system refused what turnback needed: {what}. What turnback "
            f"recorded before is intact; {fix}, then try again."
        )


class ObjectMissing(RequestFailed):
    """An object a timeline names is not in the repository (`.git/objects` edited by hand,
    turnback's refs deleted and then `git gc`, or history rewritten by filter-branch or
    filter-repo): the operation stops before it writes, and says how to move on."""

    #: A full object id in an error's text (pygit2's KeyError and NotFoundError carry it).
    OBJECT_ID = re.compile(r"\b[0-9a-f]{40}(?:[0-9a-f]{24})?\b")

    @classmethod
    def names_an_object(cls, error: Exception) -> bool:
        return cls.OBJECT_ID.search(str(error)) is not None

    @classmethod
    def from_not_found(cls, error: Exception) -> ObjectMissing:
        found = cls.OBJECT_ID.search(str(error))
        what = f"object {found.group(0)}" if found else f"an object ({error})"
        return cls(
            f"The repository is missing {what}, which turnback's turns need: it was deleted "
            "from .git/objects, pruned by git gc after turnback's refs were removed, or its "
            "history was rewritten (filter-branch, filter-repo). Nothing was changed; "
            "`turnback prune --keep 0` forgets the session's turns, and captures start afresh.",
            object=found.group(0) if found else None,
        )


class Cancelled(TurnbackError):
    """The client cancelled the request before anything was committed."""

    reason = Reason.CANCELLED

    def __init__(self) -> None:
        super().__init__("Request cancelled; nothing was changed.")
