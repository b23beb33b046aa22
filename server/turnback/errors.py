"""One error type for the engine, with structured variants.

The engine raises these; the LSP server and the CLI map them to JSON-RPC codes
(or exit codes) at the edge, so no front invents its own error vocabulary.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any


#: JSON-RPC InvalidParams: a parameter is malformed.
INVALID_PARAMS = -32602
#: LSP RequestFailed: a well-formed request that could not be carried out.
REQUEST_FAILED = -32803
#: LSP RequestCancelled: the client cancelled the request; nothing was changed.
REQUEST_CANCELLED = -32800
#: JSON-RPC InternalError: a bug; logged, answered without a traceback.
INTERNAL_ERROR = -32603


class TurnbackError(Exception):
    """Base of every error the engine reports to a user."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def data(self) -> dict[str, Any] | None:
        return None


class InvalidParams(TurnbackError):
    """A parameter has the wrong type or value; the message names the field."""

    code = INVALID_PARAMS

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"Invalid parameter '{field}': {problem}")
        self.field = field

    @property
    def data(self) -> dict[str, Any]:
        return {"field": self.field}


class RequestFailed(TurnbackError):
    """A well-formed request that cannot be carried out; `reason` is documented."""

    code = REQUEST_FAILED
    reason: str = "failed"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details

    @property
    def data(self) -> dict[str, Any]:
        return {"reason": self.reason, **self.details}


class Conflict(RequestFailed):
    """Files the restore would change were edited after the state it expects."""

    reason = "conflict"

    def __init__(self, files: list[str], operation: str) -> None:
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        back = "redo" if operation == "undo" else "rescue"  # both keep what force overwrites
        super().__init__(
            f"{operation.capitalize()} would overwrite changes made after the turn: {shown}. "
            f"Retry with force to overwrite them ({back} can bring them back).",
            files=files,
        )


class NoOpenTurn(RequestFailed):
    """An "after" capture with no active turn to seal."""

    reason = "noOpenTurn"

    def __init__(self, session: str) -> None:
        super().__init__(
            f"No active turn in session '{session}' to record an \"after\" capture for; "
            'capture with phase "before" first.',
            session=session,
        )


class NoWorkspace(RequestFailed):
    """The request names no usable workspace folder."""

    reason = "noWorkspace"


class Busy(RequestFailed):
    """Another process held the repository's lock for too long."""

    reason = "busy"


class WorkspaceTooLarge(RequestFailed):
    """The work tree exceeds a documented safety limit, so nothing was captured."""

    reason = "workspaceTooLarge"


class WorkTreeChanging(RequestFailed):
    """Files kept changing while they were being read, so no consistent snapshot exists."""

    reason = "workTreeChanging"


class UnsupportedRepository(RequestFailed):
    """The repository uses a git feature libgit2 cannot read (a sparse index, say)."""

    reason = "unsupportedRepository"


class RestoreFailed(RequestFailed):
    """Writing files failed midway; what was written has been rolled back."""

    reason = "restoreFailed"


class Cancelled(TurnbackError):
    """The client cancelled the request before anything was committed."""

    code = REQUEST_CANCELLED

    def __init__(self) -> None:
        super().__init__("Request cancelled; nothing was changed.")
