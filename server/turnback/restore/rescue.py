"""Putting a rescued version back: the files a forced restore overwrote.

A forced redo (or undo) keeps what it overwrote as a rescued version of the
session. A rescue is a restore like any other: it saves what it replaces
before writing (that saved state becomes a rescued version in turn, so a
rescue can itself be rescued back), journals its intent, and writes through
the same planner and writer as undo and redo. It changes no turn's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import FileMode

from ..diff.turndiff import relative_path
from ..errors import InvalidParams
from ..history.context import RestoreOptions
from ..history.timeline import REPLACED_BY_RESCUE, RescuedVersion, Timeline
from ..results import RescueResult
from .plan import Plan, Step
from .undo_redo import Restorer


@dataclass
class RescueRequest:
    version_id: str
    #: Paths (relative, absolute or file URIs) to put back; None: every file of the version.
    paths: list[str] | None = None


def check_request(version_id: Any, paths: Any) -> RescueRequest:
    """Validates the wire shapes: an id string and an optional list of path strings."""
    if not isinstance(version_id, str) or not version_id:
        raise InvalidParams("id", "must be the id of a rescued version (see list)")
    if paths is not None and (
        not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths)
    ):
        raise InvalidParams("paths", "must be a list of non-empty paths")
    if paths == []:  # a client's empty selection: never "all of them"
        raise InvalidParams("paths", "names no file; leave it out to put back all the version's")
    return RescueRequest(version_id, paths)


def session_holding(timelines: list[Timeline], version_id: str) -> str | None:
    """The session that holds rescued version `version_id`, if any."""
    return next((t.session for t in timelines if t.find_rescued(version_id)), None)


def select_files(
    root: Path, version: RescuedVersion, paths: list[str] | None, saved: pygit2.Tree
) -> list[str]:
    """The version's files that `paths` name (a file, or a directory holding some). A
    version an older turnback kept noted no files: the paths are looked for in its saved
    state (`saved`), and must be named."""
    noted = version.files or None
    if paths is None:
        if noted is None:
            raise InvalidParams(
                "paths",
                f"rescued version {version.id} was kept by an older turnback, which did not "
                f"note its files: name the ones to put back (git show {version.commit[:12]}"
                ":PATH shows one)",
            )
        return list(noted)
    chosen: set[str] = set()
    for path in paths:
        try:
            rel = relative_path(root, path)
        except InvalidParams as error:  # named after the list, not the single `path`
            raise InvalidParams("paths", error.message.split(": ", 1)[-1]) from None
        if noted is None:
            found = _files_at(saved, rel)
        else:
            found = [f for f in noted if not rel or f == rel or f.startswith(rel + "/")]
        if not found:
            raise InvalidParams("paths", f"rescued version {version.id} holds no file {rel!r}")
        chosen.update(found)
    return sorted(chosen)


def _files_at(saved: pygit2.Tree, rel: str) -> list[str]:
    """The file at `rel` in `saved`, or every file below the folder there."""
    if not rel:
        return _files_in(saved)
    try:
        entry = saved[rel]
    except KeyError:
        return []
    if entry.filemode == FileMode.TREE:
        return _files_in(entry, f"{rel}/")  # type: ignore[arg-type]
    return [] if entry.filemode == FileMode.COMMIT else [rel]


def _files_in(tree: pygit2.Tree, prefix: str = "") -> list[str]:
    """Every file path in `tree` (submodules and folders not listed)."""
    found: list[str] = []
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if entry.filemode == FileMode.TREE:
            found += _files_in(tree[entry.name], f"{path}/")  # type: ignore[arg-type]
        elif entry.filemode != FileMode.COMMIT:
            found.append(path)
    return found


def rescue(
    restorer: Restorer, session: str, request: RescueRequest, options: RestoreOptions
) -> RescueResult:
    """Writes the rescued version's files back; the engine holds the repository lock."""
    ctx = restorer.ctx
    timeline = ctx.store.load(session)
    version = timeline.find_rescued(request.version_id) if timeline else None
    if timeline is None or version is None:
        raise InvalidParams(
            "id", f"no rescued version {request.version_id!r} in session '{session}'"
        )
    source = ctx.tree(version.commit)
    files = select_files(ctx.ws.root, version, request.paths, source)
    snap = ctx.capture_paths(source, set(files))
    saved = ctx.snapshot_commit(snap, f"turnback: state replaced by rescue of {version.id}\n")
    plan = restorer.plan([Step(files, None, source)], snap, options, False, "rescue", [])
    replaced: RescuedVersion | None = None
    if plan.writes and not options.dry_run:
        replaced = timeline.add_rescued(saved, REPLACED_BY_RESCUE, list(plan.writes))
        restorer.apply("rescue", timeline, plan, snap, saved, source)
    return _result(timeline, version, plan, replaced, options.dry_run)


def _result(
    timeline: Timeline,
    version: RescuedVersion,
    plan: Plan,
    replaced: RescuedVersion | None,
    dry: bool,
) -> RescueResult:
    count = len(plan.actions)
    noun = f"{count} file{'s' if count != 1 else ''}"
    if not plan.actions and not plan.kept:
        message = f"Nothing to rescue: the files already hold rescued version {version.id}"
    elif not plan.actions:
        message = f"Put back no file of rescued version {version.id}"
    elif dry:
        message = f"Would put back {noun} of rescued version {version.id}"
    else:
        message = (
            f"Put back {noun} of rescued version {version.id}; "
            f"what they replaced is rescued version {replaced.id}"  # type: ignore[union-attr]
        )
    if plan.kept:
        message += f" ({len(plan.kept)} kept)"
    return RescueResult(
        session=timeline.session,
        rescued=version.to_result(),
        files=list(plan.actions),
        kept=list(plan.kept),
        replaced=replaced.to_result() if replaced else None,
        message=message,
        dry_run=dry,
    )
