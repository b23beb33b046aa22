"""The ignore rules from outside the work tree, as each snapshot records them.

`.git/info/exclude` and the user's global excludes file decide what a capture leaves out,
but no snapshot holds them. A restore asks whether the state it goes to could have held
a path before deleting it (restore/plan.py); asked under today's rules, a file ignored
then by a rule the user removed since looked made by the turns, and undo deleted it. So
each snapshot commit names the rules it was captured under, in a last message line, and
a restore reads them back from its target's commit: each repository's of the workspace
(nested ones and submodules have their own `info/exclude`, and git matches the global
file's patterns from each repository's own top), by its path ("" for the root). A
commit without that line (an older turnback's) leaves the restore with today's rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from ..core.repository import WorkspaceRepo
from .ignore_rules import pattern_lines
from .revalidation import default_excludes_file, excludes_file, info_exclude

if TYPE_CHECKING:
    from .members import WorkspaceScanner

#: Each repository's rules, by its path in the workspace ("" for the root).
Patterns = dict[str, list[str]]

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
    global_file = excludes_file(ws.repo) or default_excludes_file()
    return pattern_lines(_read(global_file)) + pattern_lines(_read(info_exclude(ws)))


def workspace_patterns(scanner: WorkspaceScanner) -> Patterns:
    """The outside rules of the workspace's root and of each of its member repositories."""
    found = {"": outside_patterns(scanner.ws)}
    for path, member in scanner.members.items():
        found[path] = outside_patterns(member.ws)
    return found


def with_patterns(message: str, patterns: Patterns) -> str:
    """A snapshot commit's message, with the rules it was captured under as its last line."""
    line = json.dumps(patterns, ensure_ascii=True, sort_keys=True)
    return f"{message.rstrip(chr(10))}\n\n{TRAILER}{line}\n"


def patterns_at(repo: pygit2.Repository, commit: str | None) -> Patterns | None:
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
    if not isinstance(found, dict) or not isinstance(found.get(""), list):
        return None
    if not all(isinstance(v, list) and all(isinstance(p, str) for p in v) for v in found.values()):
        return None
    return found
