"""When a full scan must check its unchanged untracked entries against the rules again.

An untracked file a capture kept stays in the snapshots until the rules that let it in
say otherwise: a `.gitignore`, `info/exclude` or `core.excludesFile` edit, the user's
index (`git rm --cached` makes a tracked file untracked, and maybe ignored), the
settings, or the directories around it (a repository created over it, a directory grown
past the untracked-file limit). Asking again for each entry costs ~65 ms for the 550
untracked files of the 100k benchmark, on every full scan; a scan skips it when none of
those inputs changed since the last check. A directory whose entries changed shows in its
mtime, which the special-file walk already reads (specialfiles.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from ..core.repository import WorkspaceRepo
from ..core.worktree import Stamp, stamp_of


def _stamp(path: Path) -> Stamp | None:
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None


def _home() -> Path:
    """The user's home; never raises (Path.home does where HOME is unset and unknown)."""
    return Path(os.path.expanduser("~"))


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


def _excludes_file(repo: pygit2.Repository) -> Path | None:
    try:
        value = repo.config["core.excludesFile"]
    except (KeyError, pygit2.GitError, ValueError):
        return None
    return Path(os.path.expanduser(value)) if value else None


def rule_sources(ws: WorkspaceRepo) -> list[Path]:
    """The files outside the work tree that git's ignore rules come from: the repository's
    exclude file, the config files that may name `core.excludesFile`, and that file."""
    git_dir = Path(ws.repo.path)
    common = ws.objects_dir.parent
    home = _home()
    sources = [
        common / "info" / "exclude",
        git_dir / "config",
        common / "config",
        Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"),
        _config_home() / "git" / "config",
        _config_home() / "git" / "ignore",
        Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
    ]
    excludes = _excludes_file(ws.repo)
    if excludes is not None:
        sources.append(excludes)
    return sources


def rules_stamp(ws: WorkspaceRepo, user_index: object) -> tuple[object, ...]:
    """Everything outside the work tree an untracked verdict depends on, as one value:
    the user's index version and the stamps of the rule sources."""
    return (user_index, *(_stamp(path) for path in rule_sources(ws)))
