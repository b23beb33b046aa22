"""When a full scan must check its unchanged untracked entries against the rules again.

An untracked file a capture kept stays in the snapshots until the rules that let it in
say otherwise: a `.gitignore`, `info/exclude` or `core.excludesFile` edit, the user's
index (`git rm --cached` makes a tracked file untracked, and maybe ignored), the
settings, or the directories around it (a repository created over it, a directory grown
past the untracked-file limit). Asking again for each entry costs ~65 ms for the 550
untracked files of the 100k benchmark, on every full scan; a scan skips it when none of
those inputs changed since the last check. A directory whose entries changed shows in its
mtime, which the special-file walk already reads (specialfiles.py). When a check is due,
`recheck_untracked` asks again for each untracked entry.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import pygit2

from ..core.repository import WorkspaceRepo
from ..core.treeops import changed_paths
from ..core.worktree import Stamp, stamp_at, under_real_dirs
from .untracked import IGNORED, Skipped, UntrackedPolicy
from .userindex import UserIndex


def _home() -> Path:
    """The user's home; never raises (Path.home does where HOME is unset and unknown)."""
    return Path(os.path.expanduser("~"))


def config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


def excludes_file(repo: pygit2.Repository) -> Path | None:
    """The file `core.excludesFile` names; a relative one from the work tree's top, as git
    and libgit2 read it (not from this process's folder: the daemon's is `/`)."""
    try:
        value = repo.config["core.excludesFile"]
    except (KeyError, pygit2.GitError, ValueError):
        return None
    if not value:
        return None
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() or not repo.workdir else Path(repo.workdir) / path


def info_exclude(ws: WorkspaceRepo) -> Path:
    """The repository's own exclude file."""
    return ws.objects_dir.parent / "info" / "exclude"


def default_excludes_file() -> Path:
    """The global excludes file git reads where `core.excludesFile` is not set."""
    return config_home() / "git" / "ignore"


def ignore_files(ws: WorkspaceRepo) -> list[Path]:
    """The ignore files outside the work tree: the repository's exclude file, the
    default global one, and the one `core.excludesFile` names."""
    files = [info_exclude(ws), default_excludes_file()]
    excludes = excludes_file(ws.repo)
    if excludes is not None:
        files.append(excludes)
    return files


def rule_sources(ws: WorkspaceRepo) -> list[Path]:
    """The files outside the work tree that git's ignore rules come from: the ignore
    files, and the config files that may name `core.excludesFile`."""
    git_dir = Path(ws.repo.path)
    common = ws.objects_dir.parent
    home = _home()
    return [
        *ignore_files(ws),
        git_dir / "config",
        common / "config",
        Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"),
        config_home() / "git" / "config",
        Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
    ]


def rules_stamp(ws: WorkspaceRepo, user_index: object) -> tuple[object, ...]:
    """Everything outside the work tree an untracked verdict depends on, as one value:
    the user's index version and the stamps of the rule sources."""
    return (user_index, *rule_files_stamp(ws))


def rule_files_stamp(ws: WorkspaceRepo) -> tuple[Stamp | None, ...]:
    """The stamps of the rule sources: a new value means an ignore rule may have changed."""
    return tuple(stamp_at(path) for path in rule_sources(ws))


def _a_file(ws: WorkspaceRepo, path: str) -> bool:
    """A file or symlink stands at `path`, reached through real directories only."""
    try:
        st = os.lstat(ws.root / path)
    except OSError:
        return False
    return (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and under_real_dirs(ws.root, path)


def recheck_untracked(
    ws: WorkspaceRepo,
    user_index: UserIndex,
    index: pygit2.Index,
    policy: UntrackedPolicy,
    skipped: dict[str, Skipped],
    seen: set[str],
    last: pygit2.Oid | None,
) -> tuple[set[str], list[str]]:
    """Drops unchanged untracked entries that rules now leave out (a .gitignore edit), and
    finds the files the user's index tracks that `index` lacks (`git add -f` of a file in
    an ignored directory: libgit2's scan lists no ignored file, tracked elsewhere or not).
    Returns both. `last` is the index's tree before this scan changed `seen`."""
    missing: list[str] = []
    if ws.shadow:
        candidates: Iterable[str] = [entry.path for entry in index]
    elif last is None:
        return set(), missing
    else:
        # Untracked entries, and files tracked since, are where the index's tree differs
        # from the user's.
        differing = sorted(changed_paths(ws.repo, user_index.tree, ws.repo[last]))
        candidates = [p for p in differing if not user_index.tracks(p)]
        missing = [
            p
            for p in differing
            if user_index.tracks(p) and p not in index and p not in seen and _a_file(ws, p)
        ]
    dropped: set[str] = set()
    for path in candidates:
        if path in seen or path not in index:
            continue
        verdict = policy.file_verdict(path)
        if verdict is not None:
            index.remove(path)
            dropped.add(path)
            if verdict is not IGNORED:
                skipped[verdict.path] = verdict
    return dropped, missing
