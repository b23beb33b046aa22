"""The intent of a restore, written to git before any file is touched.

A restore records, under one ref, the files it will write, the saved state
they are being replaced from, and the timeline commit that will mark it done.
Then it writes the files, makes them durable, moves the timeline ref (the
commit point) and drops the journal. A process that finds a journal left by a
crash (kill -9, power loss) rolls the files back to the saved state if the
timeline ref never moved, or just drops the journal if it did: the work tree
is always a whole state, before or after, and agrees with the timeline. Only
the files still as the restore wrote them are rolled back: one the user changed
since the crash matches neither state and is left as it is (restore.roll_back).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pygit2

from ..core.gitrefs import delete_ref, set_aside_ref, set_ref
from ..core.objectwrites import write_blob, write_commit, written
from ..core.treeops import Entry
from .timeline import signature


class DamagedJournal(Exception):
    """The journal of an interrupted restore does not read back."""


@dataclass
class Intent:
    operation: str
    session: str
    writes: dict[str, Entry | None]
    saved: str
    timeline_before: str | None
    timeline_after: str
    #: The journal commit, once written: it names the temporary files of this restore.
    id: str = ""


class Journal:
    def __init__(self, repo: pygit2.Repository, ref_prefix: str) -> None:
        self.repo = repo
        self.ref = f"{ref_prefix}/journal"

    def write(self, intent: Intent) -> str:
        """Writes the intent as a commit no ref names yet, and returns its id (`begin`
        names it: the restore makes its ledger in between, so a recovery finds one)."""
        data = {
            "operation": intent.operation,
            "session": intent.session,
            "writes": {p: (list(e) if e else None) for p, e in intent.writes.items()},
            "saved": intent.saved,
            "timelineBefore": intent.timeline_before,
            "timelineAfter": intent.timeline_after,
        }
        builder = self.repo.TreeBuilder()
        blob = write_blob(self.repo, json.dumps(data).encode())
        builder.insert("journal.json", blob, pygit2.GIT_FILEMODE_BLOB)
        parents = [pygit2.Oid(hex=intent.saved), pygit2.Oid(hex=intent.timeline_after)]
        sig = signature()
        message = f"turnback journal: {intent.operation}\n"
        commit = write_commit(self.repo, sig, sig, message, written(builder.write), parents)
        intent.id = str(commit)
        return intent.id

    def begin(self, intent: Intent) -> None:
        """Points the journal's ref at the written intent: from then on, a crash is
        recovered."""
        set_ref(self.repo, self.ref, pygit2.Oid(hex=intent.id), "journal begin")

    def pending(self) -> Intent | None:
        """The intent of a restore a crash interrupted; None when there is none, and
        DamagedJournal when its ref or objects do not read (a disk that lost writes)."""
        try:
            ref = self.repo.references.get(self.ref)
            if ref is None:
                return None
            return self._read(ref)
        except (KeyError, ValueError, TypeError, AttributeError, pygit2.GitError) as error:
            raise DamagedJournal(f"{type(error).__name__}: {error}") from None

    def set_aside(self) -> str:
        """Moves a damaged journal out of the way (never deleting what it names), so that
        operations go on; returns where it went."""
        return set_aside_ref(self.repo, self.ref)

    def _read(self, ref: pygit2.Reference) -> Intent:
        commit = self.repo[ref.target]
        data: dict[str, Any] = json.loads(self.repo[commit.tree["journal.json"].id].data)
        return Intent(
            operation=data["operation"],
            session=data["session"],
            writes={p: (Entry(e[0], e[1]) if e else None) for p, e in data["writes"].items()},
            saved=data["saved"],
            timeline_before=data["timelineBefore"],
            timeline_after=data["timelineAfter"],
            id=str(ref.target),
        )

    def end(self) -> None:
        delete_ref(self.repo, self.ref, "journal end")
