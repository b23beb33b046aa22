"""Agents at work in the repositories next to a workspace: nested in it, or around it.

Sessions live in the repository their hook ran in, so a workspace's own timelines say
nothing of an agent working from inside a nested repository (or from the repository
around the workspace), whose edits a restore here would write over.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from ..core.discovery import ceiling_dirs
from ..errors import Reason, RequestFailed
from .running import changed_at, seconds_text, written_lately
from .timeline import OPEN_TRANSCRIPT, read_headers, session_targets

if TYPE_CHECKING:
    from .context import Context, RestoreOptions


class RunningNearby(RequestFailed):
    """An agent's turn runs in a repository inside this workspace, or around it."""

    reason = Reason.TURN_RUNNING

    def __init__(
        self, session: str, where: str, inside: bool, seconds: float, quiet: int, operation: str
    ) -> None:
        relation = "a repository in this workspace" if inside else "the repository around it"
        super().__init__(
            f"{operation.capitalize()} refused: session '{session}' has a turn still running "
            f"in {where} ({relation}; its conversation changed {seconds_text(seconds)} ago). "
            f"Wait until it ends (or is quiet for {seconds_text(quiet)}), or retry with force.",
            session=session,
            repository=where,
            seconds_since_change=round(seconds, 1),
            quiet_period=quiet,
        )


def guard_neighbours(ctx: Context, operation: str, options: RestoreOptions) -> None:
    """Refuses a restore while an agent's turn runs in a repository nested in this workspace
    or enclosing it: its sessions are that repository's, which `_guard_others` never read,
    and the undo of the root's turn reverted a Codex turn still writing in `api/` (then in
    no turn of its own). Told by the conversation's transcript, as for an older turn; the
    other repository is only read (its refs), never written. A forced restore and a dry
    run are never refused."""
    if options.force or options.dry_run:
        return
    quiet = ctx.settings.turn_quiet_period
    for repo, root, inside in _neighbours(ctx):
        for header in _session_headers(repo):
            transcript = header.get(OPEN_TRANSCRIPT)
            if not isinstance(transcript, str) or not written_lately(transcript, quiet):
                continue
            try:
                seconds = max(time.time() - changed_at(os.stat(transcript)), 0.0)
            except OSError:
                continue  # gone since
            where = os.path.relpath(root, ctx.ws.root) if inside else str(root)
            raise RunningNearby(header["session"], where, inside, seconds, quiet, operation)


def _neighbours(ctx: Context) -> list[tuple[pygit2.Repository, Path, bool]]:
    """The repositories nested in this workspace (its members, which keep sessions of
    their own when an agent works from inside one) and the one around it, if any (within
    `GIT_CEILING_DIRECTORIES`): each with its work tree, and whether it is inside."""
    found = [(s.ws.repo, s.ws.root, True) for s in ctx.scanner.scanners()[1:]]
    try:
        ceiling = ceiling_dirs()
        above = str(ctx.ws.root.parent)
        git_dir = (
            pygit2.discover_repository(above, False, ceiling)
            if ceiling
            else pygit2.discover_repository(above)
        )
        if git_dir is not None:
            repo = pygit2.Repository(git_dir)
            if repo.workdir:
                found.append((repo, Path(repo.workdir).resolve(), False))
    except pygit2.GitError:
        pass
    return found


def _session_headers(repo: pygit2.Repository) -> list[dict[str, Any]]:
    """The header of each session timeline in `repo`, of any of its work trees."""
    targets = session_targets(repo, lambda name: _SESSIONS.match(name) is not None)
    return [header for _commit, header in read_headers(repo, targets)]


#: A session ref of any work tree: refs/turnback/<worktree>/sessions/<session>.
_SESSIONS = re.compile(r"refs/turnback/[^/]+/sessions/")
