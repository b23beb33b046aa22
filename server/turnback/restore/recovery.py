"""Finishing or rolling back a restore a crash interrupted, and the writer restores use.

Every restore journals its intent before it writes (history/journal.py). The next
operation under the repository lock calls `recover` first: when the timeline already
moved, the restore had written everything and only the journal is dropped; otherwise
the files written are put back from the saved state, except those the user changed
since, which are kept (and the saved state stays reachable as a rescued version). The
restore's ledger (workwriter.py) says which paths it wrote and the stat each had then:
a path it never reached, or one rewritten since (a `git checkout` after the crash), is
the user's, whatever its bytes.
"""

from __future__ import annotations

from pathlib import Path

from ..core.durability import make_durable
from ..core.repository import WorkspaceRepo
from ..errors import RestoreFailed
from ..history.context import Context
from ..history.journal import DamagedJournal
from ..history.timeline import RECOVERY_KEPT
from .plan import describe, flags_hint, roll_back
from .workwriter import WorkWriter, sweep_staging


def staging_dir(ws: WorkspaceRepo) -> Path:
    """Where restores write temporary files before renaming them into place."""
    return ws.state_dir / "staging"


def writer(ctx: Context, journal_id: str) -> WorkWriter:
    """Writes into the work tree for the restore `journal_id` names."""
    tag = journal_id[:16]
    return WorkWriter(ctx.ws.root, ctx.repo, staging_dir(ctx.ws), tag, ctx.ws.keeps_exec_bits)


def recover(ctx: Context) -> None:
    """Finishes or rolls back a restore a crash interrupted (the journal says which).

    What it did is appended to `ctx.recovered`, for the front to tell the user.
    """
    try:
        intent = ctx.journal.pending()
    except DamagedJournal as damaged:
        # Every operation recovers first: a journal that never reads would refuse them all.
        where = ctx.journal.set_aside()
        ctx.recovered.append(
            f"The journal of an interrupted restore could not be read ({damaged}); it was "
            f"set aside ({where}), and nothing was rolled back: the files that restore "
            "wrote stay as they are."
        )
        intent = None
    if intent is None:
        sweep_staging(staging_dir(ctx.ws), ledgers=True)  # renames a power loss undid
        return
    work = writer(ctx, intent.id)
    work.load_ledger()  # what the restore had done, path by path, before the crash
    work.sweep(list(intent.writes))  # temporary files of the write the crash cut short
    if ctx.store.ref_target(intent.session) == intent.timeline_after:
        ctx.journal.end()  # the files were all written before the commit point
        work.drop_ledger()
        ctx.recovered.append(
            f"turnback finished an interrupted {intent.operation} in session '{intent.session}'."
        )
        return
    undone = roll_back(work, intent.writes, ctx.tree(intent.saved))
    if undone.failed is not None:
        path, cause = undone.failed
        raise RestoreFailed(
            f"turnback could not roll back an interrupted {intent.operation}: "
            f"{describe(cause)} on {path}{flags_hint(cause)}; it will retry. The state before "
            f"it is commit {intent.saved}.",
            path=path,
            rolled_back=False,
            saved=intent.saved,
            kept=undone.kept,
        )
    make_durable(work.touched)
    if undone.kept:
        _keep_reachable(ctx, intent.session, intent.saved, undone.kept)
    ctx.journal.end()
    work.drop_ledger()
    n = len(undone.restored)
    message = (
        f"turnback rolled back an interrupted {intent.operation} in session "
        f"'{intent.session}': {n} file{'s' if n != 1 else ''} put back as before it."
    )
    if undone.kept:
        message += (
            f" Changed since and left as they are (yours): {', '.join(undone.kept)}."
            f" The state before the {intent.operation} is commit {intent.saved}."
        )
    ctx.recovered.append(message)


def _keep_reachable(ctx: Context, session: str, saved: str, kept: list[str]) -> None:
    """Keeps the state an interrupted restore replaced among the session's rescued
    versions: at a path the user changed since, it may be the only copy left."""
    timeline = ctx.store.load(session)
    if timeline is not None and timeline.find_rescued(saved) is None:
        timeline.add_rescued(saved, RECOVERY_KEPT, kept)
        ctx.store.commit(session, ctx.store.prepare(timeline))
