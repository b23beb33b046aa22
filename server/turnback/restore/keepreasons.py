"""Why a restore leaves a path alone: what the saved state could not hold, and what the
target state's capture could not have held (left out, or ignored by the rules of then
or of now). restore/plan.py asks these per path; the answers are the `kept` reasons."""

from __future__ import annotations

from collections.abc import Callable

from ..core.worktree import holds_repository
from ..history.context import Context
from ..snapshot.captured import Snapshot
from ..snapshot.ignore_rules import WorkspaceIgnoreRules, touches_ignore_files
from ..snapshot.outside_rules import patterns_at, workspace_patterns
from ..snapshot.untracked import NESTED_REPOSITORY
from .leftout import moved_here, moved_left_out, reason_at
from .plan import Step


def unsaved_reason(ctx: Context, snap: Snapshot) -> Callable[[str], str]:
    """Why the restore's own capture of now could not hold a path on disk."""
    reasons = {s.path: s.reason for s in snap.skipped}

    def reason(path: str) -> str:
        found = reason_at(reasons, path)
        if found:
            return found
        parts = path.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            if "/".join(parts[:depth]) in ctx.scanner.members:
                break  # inside a repository of the workspace: its files are saved
            if holds_repository(ctx.ws.root.joinpath(*parts[:depth])):
                return NESTED_REPOSITORY
        return "notSaved"

    return reason


def target_rules(ctx: Context, step: Step, moves: dict) -> WorkspaceIgnoreRules | None:
    """Ignore rules of the target snapshot, read only when a .gitignore moves or the rules
    from outside the work tree are not those it was captured under (outside_rules.py)."""
    then = patterns_at(ctx.repo, step.target_at)
    now = workspace_patterns(ctx.scanner)
    if not touches_ignore_files(moves) and (then is None or then == now):
        return None
    return WorkspaceIgnoreRules(ctx.repo, step.target, then if then is not None else now)


def target_ignored(ctx: Context, rules: WorkspaceIgnoreRules | None) -> Callable[[str], bool]:
    """Ignored, and untracked now, under the target snapshot's rules."""
    if rules is None:
        return lambda _path: False
    tracks = ctx.scanner.tracks
    return lambda path: rules.is_ignored(path) and not tracks(path)


def left_out_of_target(
    ctx: Context, rules: WorkspaceIgnoreRules | None, target_skipped: list[dict[str, str]]
) -> Callable[[str], str | None]:
    """Why the target state may not hold a path that existed then: its capture left the
    path out, or ignore rules did (an ignored file the turns force-added, say)."""
    reasons = {s["path"]: s["reason"] for s in target_skipped}
    by_rules = ctx.scanner.ignored_by_rules
    moved = moved_left_out(ctx.ws.root, target_skipped)

    def reason(path: str) -> str | None:
        found = reason_at(reasons, path) or (moved and moved_here(ctx.ws.root, path, moved))
        if found:
            return found
        ignored = by_rules(path) or (rules is not None and rules.is_ignored(path))
        return "ignored" if ignored else None

    return reason
