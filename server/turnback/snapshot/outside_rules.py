"""The ignore rules from outside the work tree, as each snapshot records them.

`.git/info/exclude` and the user's global excludes file decide what a capture leaves out,
but no snapshot holds them. A restore asks whether the state it goes to could have held
a path before deleting it (restore/plan.py); asked under today's rules, a file ignored
then by a rule the user removed since looked made by the turns, and undo deleted it. So
each snapshot commit names the rules it was captured under, in a last message line, and
a restore reads them back from its target's commit. A commit without that line (an
older turnback's) leaves the restore with today's rules, as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from ..core.repository import WorkspaceRepo
from .ignore_rules import pattern_lines
from .revalidation import config_home, excludes_file

#: The message line that carries the rules: `Turnback-Excludes: ["*.env", ...]`.
TRAILER = "Turnback-Excludes: "


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError):
        return ""


def outside_patterns(ws: WorkspaceRepo) -> list[str]:
    """The patterns in force from outside the work tree, the weaker first (git's order):
    the global excludes file (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`),
    then the repository's `info/exclude`."""
    global_file = excludes_file(ws.repo) or config_home() / "git" / "ignore"
    exclude = ws.objects_dir.parent / "info" / "exclude"
    return pattern_lines(_read(global_file)) + pattern_lines(_read(exclude))


def with_patterns(message: str, patterns: list[str]) -> str:
    """A snapshot commit's message, with the rules it was captured under as its last line."""
    line = json.dumps(patterns, ensure_ascii=True)
    return f"{message.rstrip(chr(10))}\n\n{TRAILER}{line}\n"


def patterns_at(repo: pygit2.Repository, commit: str | None) -> list[str] | None:
    """The rules a snapshot commit names; None when it names none (or cannot be read)."""
    if commit is None:
        return None
    try:
        message = repo[commit].message
    except (KeyError, ValueError, pygit2.GitError):
        return None
    last = message.rstrip("\n").rpartition("\n")[2]
    if not last.startswith(TRAILER):
        return None
    try:
        found = json.loads(last[len(TRAILER) :])
    except ValueError:
        return None
    if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
        return None
    return found
