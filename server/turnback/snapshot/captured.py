"""What a capture gives back, shared by the scanner's two paths and their callers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pygit2

from ..core.worktree import Stamp
from .untracked import Skipped

#: A capture's progress report: a message and a percentage, when one is known.
Progress = Callable[[str, int | None], None]


@dataclass
class Snapshot:
    """A captured work tree: its tree, and what was left out and why."""

    tree: pygit2.Oid
    skipped: list[Skipped] = field(default_factory=list)
    #: For a capture of given paths (a restore's save): the stamp each had when it was read.
    stamps: dict[str, Stamp | None] = field(default_factory=dict)
