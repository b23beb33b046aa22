"""Where git looks for the repository holding a folder, and where it stops looking.

git walks up from a folder to the first `.git`, but never into a folder named in
`GIT_CEILING_DIRECTORIES` (a dotfiles repository at `$HOME/.git` is often fenced off that
way). turnback must find the repository git finds: above a ceiling it would take a
whole home folder for the project's work tree. No pygit2 here: hooks use it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def ceilings() -> set[Path]:
    """The folders of `GIT_CEILING_DIRECTORIES` (git's list separator), resolved."""
    found: set[Path] = set()
    for entry in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            found.add(Path(os.path.realpath(entry)))
    return found


def ceiling_dirs() -> str | None:
    """`GIT_CEILING_DIRECTORIES` as libgit2's discovery takes it, or None."""
    return os.environ.get("GIT_CEILING_DIRECTORIES") or None


def looked_in(start: Path) -> Iterator[Path]:
    """`start` (absolute), then each folder above it that git looks in for a `.git`."""
    stops = ceilings()
    yield start
    for folder in start.parents:
        if folder in stops:
            return
        yield folder
