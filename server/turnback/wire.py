"""protocol.md's JSON, made in one place for every front (LSP server, daemon, CLI).

The engine returns the dataclasses of `results.py` and raises `TurnbackError`s with a
`Reason`; this module turns them into the wire's camelCase objects and JSON-RPC errors.
`to_wire` takes any engine result; `error_code`, `error_data` and `error_to_wire` take
any engine error. Nothing below the fronts imports it.
"""

from __future__ import annotations

from typing import Any

from . import results as r
from .errors import InvalidParams, Reason, TurnbackError

#: JSON-RPC InvalidParams: a parameter is malformed.
INVALID_PARAMS = -32602
#: LSP RequestFailed: a well-formed request that could not be carried out.
REQUEST_FAILED = -32803
#: LSP RequestCancelled: the client cancelled the request; nothing was changed.
REQUEST_CANCELLED = -32800
#: JSON-RPC InternalError: a bug; logged, answered without a traceback.
INTERNAL_ERROR = -32603

#: Reason → JSON-RPC code; every other reason is a RequestFailed with `data.reason`.
_CODES: dict[Reason, int] = {
    Reason.INVALID_PARAMS: INVALID_PARAMS,
    Reason.CANCELLED: REQUEST_CANCELLED,
    Reason.INTERNAL: INTERNAL_ERROR,
}
_REASONS = {code: reason for reason, code in _CODES.items()}


# ---- errors -----------------------------------------------------------------------------


def error_code(error: TurnbackError) -> int:
    if isinstance(error, WireError):
        return error.code
    return _CODES.get(error.reason, REQUEST_FAILED)


def error_data(error: TurnbackError) -> dict[str, Any] | None:
    """`{"field": ...}` for bad params, `{"reason": ..., details}` for failures, else None."""
    if isinstance(error, WireError):
        return error.data
    if isinstance(error, InvalidParams):
        return {"field": error.field}
    if error.reason in _CODES:
        return None
    return {"reason": error.reason.value, **{_camel(k): v for k, v in error.details.items()}}


def error_to_wire(error: TurnbackError) -> dict[str, Any]:
    """The JSON-RPC error object: code, message, data."""
    return {"code": error_code(error), "message": error.message, "data": error_data(error)}


class WireError(TurnbackError):
    """An error another process answered on the wire (the daemon), as an engine error."""

    def __init__(self, code: int, message: str, data: Any) -> None:
        details = dict(data) if isinstance(data, dict) else {}
        named = details.pop("reason", None) if code == REQUEST_FAILED else None
        super().__init__(message, **details)
        try:
            self.reason = Reason(named) if named is not None else _REASONS[code]
        except (ValueError, KeyError):
            self.reason = Reason.FAILED if code == REQUEST_FAILED else Reason.INTERNAL
        self.code = code
        #: Passed on as it came: the wire's `data`, byte for byte.
        self.data = data


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# ---- results ----------------------------------------------------------------------------


def to_wire(result: Any) -> Any:
    """Any engine result as protocol.md's JSON (a dict already on the wire passes as is)."""
    convert = _CONVERTERS.get(type(result))
    return convert(result) if convert is not None else result


def skipped(items: list[r.SkippedPath]) -> list[dict[str, str]]:
    return [{"path": s.path, "reason": s.reason} for s in items]


def turn(t: r.Turn) -> dict[str, Any]:
    """The protocol's Turn."""
    out: dict[str, Any] = {
        "id": t.id,
        "session": t.session,
        "turn": t.number,
        "label": t.label,
        "createdAt": t.created_at,
        "state": t.state,
        "sealed": t.sealed,
        "metadata": t.metadata,
        "skipped": skipped(t.skipped),
    }
    if t.sealed_at:
        out["sealedAt"] = t.sealed_at
    if t.repositories:
        out["repositories"] = [
            {"path": m.path, "head": m.head, "headRef": m.head_ref} for m in t.repositories
        ]
    if t.skipped_before is not None:
        out["skippedBefore"] = skipped(t.skipped_before)
    if t.files is not None:
        out["files"] = [changed_file(f) for f in t.files]
    if t.progress is not None:
        out["progress"] = t.progress
    return out


def changed_file(f: r.ChangedFile) -> dict[str, Any]:
    return {"path": f.path, "oldPath": f.old_path, "status": f.status}


def running(a: r.RunningTurn) -> dict[str, Any]:
    return {
        "session": a.session,
        "turn": a.turn,
        "id": a.id,
        "harness": a.harness,
        "harnessSession": a.harness_session,
        "lastChangeAt": a.last_change_at,
        "secondsSinceChange": round(a.seconds_since_change, 1),
        "quietPeriod": a.quiet_period,
    }


def rescued(v: r.Rescued) -> dict[str, Any]:
    """The protocol's RescuedVersion."""
    return {"id": v.id, "createdAt": v.created_at, "reason": v.reason, "files": v.files}


def list_result(x: r.ListResult) -> dict[str, Any]:
    return {
        "session": x.session,
        "workTree": x.work_tree.as_uri(),
        "turns": [turn(t) for t in x.turns],
        "running": running(x.running) if x.running is not None else None,
        "runningElsewhere": running(x.running_elsewhere) if x.running_elsewhere else None,
        "canUndo": x.can_undo,
        "canRedo": x.can_redo,
        "rescued": [rescued(v) for v in x.rescued],
        "sessions": [{"id": s.id, "turns": s.turns, "updatedAt": s.updated_at} for s in x.sessions],
    }


def file_action(a: r.FileAction) -> dict[str, str]:
    return {"path": a.path, "action": a.action}


def kept_file(k: r.KeptFile) -> dict[str, str]:
    out = {"path": k.path, "reason": k.reason}
    if k.by:
        out["by"] = k.by
    return out


def agent_hint(h: r.AgentHint) -> dict[str, Any]:
    out: dict[str, Any] = {"harness": h.harness, "prompt": h.prompt, "message": h.message}
    if h.session_id is not None:
        out["sessionId"] = h.session_id
    return out


def repository_change(c: r.RepositoryChange) -> dict[str, Any]:
    out: dict[str, Any] = {"path": c.path, "change": c.change}
    if c.heads is not None:
        out["oldHead"], out["newHead"] = c.heads.old_head, c.heads.new_head
    out["message"] = c.message
    return out


def restore_result(x: r.RestoreResult) -> dict[str, Any]:
    """An undo's or redo's result: `turnsUndone` or `turnsRedone` first."""
    count = "turnsUndone" if x.operation == "undo" else "turnsRedone"
    out: dict[str, Any] = {
        count: x.count,
        "turns": [turn(t) for t in x.turns],
        "files": [file_action(a) for a in x.files],
        "kept": [kept_file(k) for k in x.kept],
        "message": x.message,
        "dryRun": x.dry_run,
    }
    if x.head_moved is not None:
        out["headMoved"] = {"oldHead": x.head_moved.old_head, "newHead": x.head_moved.new_head}
    if x.repository_changes:
        out["repositoryChanges"] = [repository_change(c) for c in x.repository_changes]
    if x.agent_hint is not None:
        out["agentHint"] = agent_hint(x.agent_hint)
    if x.rescued is not None:
        out["rescued"] = rescued(x.rescued)
    if x.not_restored:
        out["notRestored"] = skipped(x.not_restored)
    return out


def rescue_result(x: r.RescueResult) -> dict[str, Any]:
    return {
        "session": x.session,
        "rescued": rescued(x.rescued),
        "files": [file_action(a) for a in x.files],
        "kept": [kept_file(k) for k in x.kept],
        "replaced": rescued(x.replaced) if x.replaced is not None else None,
        "message": x.message,
        "dryRun": x.dry_run,
    }


def hunk(h: r.Hunk) -> dict[str, int]:
    return {
        "oldStart": h.old_start,
        "oldLines": h.old_lines,
        "newStart": h.new_start,
        "newLines": h.new_lines,
    }


def file_diff(d: r.FileDiff) -> dict[str, Any]:
    """One file of a diff; `truncated` appears only when set, to keep results small."""
    out: dict[str, Any] = {
        "path": d.path,
        "oldPath": d.old_path,
        "status": d.status,
        "binary": d.binary,
        "additions": d.additions,
        "deletions": d.deletions,
        "hunks": [hunk(h) for h in d.hunks],
        "diff": d.diff,
    }
    if d.truncated:
        out["truncated"] = True
    if d.old_mode is not None and d.new_mode is not None:
        out["oldMode"], out["newMode"] = f"{d.old_mode:06o}", f"{d.new_mode:06o}"
    return out


def diff_result(x: r.DiffResult) -> dict[str, Any]:
    return {
        "turn": turn(x.turn),
        "workTree": x.work_tree.as_uri(),
        "files": [file_diff(d) for d in x.files],
    }


def file_content(x: r.FileContent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": x.path,
        "side": x.side,
        "turn": x.turn_id,
        "workTree": x.work_tree.as_uri(),
        "exists": x.exists,
        "binary": x.binary,
    }
    if x.too_large:
        out["tooLarge"] = True
    if x.size is not None:
        out["size"] = x.size
    out["text"] = x.text
    return out


def prune_result(x: r.PruneResult) -> dict[str, Any]:
    return {
        "removedTurns": [
            {"session": t.session, "turn": t.turn, "id": t.id} for t in x.removed_turns
        ],
        "removedRescued": [{"session": v.session, "id": v.id} for v in x.removed_rescued],
        "removedSessions": x.removed_sessions,
        "message": x.message,
    }


_CONVERTERS: dict[type, Any] = {
    r.Turn: turn,
    r.ListResult: list_result,
    r.RestoreResult: restore_result,
    r.RescueResult: rescue_result,
    r.DiffResult: diff_result,
    r.FileContent: file_content,
    r.PruneResult: prune_result,
}
