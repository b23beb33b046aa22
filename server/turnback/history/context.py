"""What the engine's parts share, so that none of them needs the Engine above them.

Restores (restore/) and turn progress (history/running.py) get a `Context`: the work
tree's repository, its timelines and journal, the settings, the engine's two ways to
capture, and its lock; plus the turn queries they all ask (a turn's trees, what it
changed, a turn by number or id). The engine builds one and keeps it current.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from ..config import Settings
from ..core.objectwrites import write_commit
from ..core.repository import WorkspaceRepo
from ..core.treeops import changed_paths
from ..errors import InvalidParams
from ..snapshot.outside_rules import with_patterns, workspace_patterns
from .journal import Journal
from .timeline import Timeline, TimelineStore, TurnRecord, signature

if TYPE_CHECKING:
    from ..snapshot.captured import Progress, Snapshot
    from ..snapshot.members import WorkspaceScanner

CancelCheck = Callable[[], bool]


@dataclass
class RestoreOptions:
    """How an undo, redo or rescue runs (the guards in running.py read them too)."""

    count: int = 1
    force: bool = False
    dry_run: bool = False
    #: Undo down to (redo up to) this turn, by number or id, instead of counting.
    turn: int | str | None = None
    #: Work-tree paths open in an editor with unsaved changes: never overwritten silently.
    dirty: frozenset[str] = frozenset()


@dataclass
class Context:
    """One work tree's collaborators, as the engine hands them to its parts."""

    ws: WorkspaceRepo
    store: TimelineStore
    journal: Journal
    settings: Settings
    #: A capture of the whole work tree (the watcher's changes only, when it can).
    capture_now: Callable[[Progress | None, CancelCheck | None], Snapshot]
    #: A capture of just `paths`, on top of the tree `base`.
    capture_paths: Callable[[pygit2.Tree | None, set[str]], Snapshot]
    #: The repository lock, with an operation a crash interrupted recovered first.
    locked: Callable[[], AbstractContextManager[None]]
    #: The workspace's scanners (the root's and its member repositories'): their view of
    #: each user index and ignore rules, and the members a turn records.
    scanner: WorkspaceScanner
    #: Messages about interrupted operations recovered, until a front shows them.
    recovered: list[str] = field(default_factory=list)

    @property
    def repo(self) -> pygit2.Repository:
        return self.ws.repo

    def tree(self, commit_hex: str | None) -> pygit2.Tree | None:
        if commit_hex is None:
            return None
        commit = self.repo[pygit2.Oid(hex=commit_hex)]
        # `commit.tree` says "Unable to read tree" of a missing tree; a lookup by id says
        # which object is missing (a KeyError the engine maps to ObjectMissing).
        return self.repo[commit.tree_id]  # type: ignore[union-attr, return-value]

    def snapshot_commit(self, snap: Snapshot, message: str) -> str:
        """Commits a snapshot's tree (on top of HEAD, for `git log` readers); no ref names it."""
        head = self.ws.head_commit()
        sig = signature()
        parents = [head] if head is not None else []
        # The rules from outside the work tree it was captured under (outside_rules.py).
        message = with_patterns(message, workspace_patterns(self.scanner))
        oid = write_commit(self.repo, sig, sig, message, snap.tree, parents)
        return str(oid)

    def end_tree(self, timeline: Timeline, turn: TurnRecord) -> pygit2.Tree | None:
        """The state a turn left: its "after" capture, the next turn's snapshot, or None (now)."""
        if turn.after:
            return self.tree(turn.after)
        following = timeline.next_after(turn)
        if following is not None:
            return self.tree(following.before)
        if turn.replaced:
            return self.tree(turn.replaced)
        return None

    def turn_changes(self, timeline: Timeline, turn: TurnRecord, now: pygit2.Tree) -> set[str]:
        end = self.end_tree(timeline, turn)
        return changed_paths(self.repo, self.tree(turn.before), end if end is not None else now)

    def find_turn(self, timeline: Timeline | None, turn: Any) -> TurnRecord:
        """The turn `turn` names (number, id or commit); the newest active one for None."""
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, (int, str))):
            raise InvalidParams("turn", "must be a turn number or a turn id")
        if timeline is None or not timeline.turns:
            session = f" '{timeline.session}'" if timeline is not None else ""
            raise InvalidParams("turn", f"the session{session} has no turns yet")
        if turn is None:
            if not timeline.active:
                newest = timeline.turns[-1].turn
                raise InvalidParams(
                    "turn",
                    f"session '{timeline.session}' has no active turn (every turn is undone); "
                    f"name one: the newest is {newest}",
                )
            return timeline.active[-1]
        for record in timeline.turns:
            if record.turn == turn or record.id == turn or record.before == turn:
                return record
        raise InvalidParams("turn", f"no turn {turn!r} in session '{timeline.session}'")
