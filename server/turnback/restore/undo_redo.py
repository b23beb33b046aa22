"""Undo and redo: which files each turn changed, what to save, what to write.

Undoing turns sets exactly the files they changed to the oldest one's
snapshot, after saving what it replaces; redoing goes to the next turn's
snapshot, or for the newest turn to exactly what its undo replaced. The
engine holds the repository lock around both.
"""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import FileMode

from ..core.durability import make_durable
from ..core.treeops import Entry, entry_at, is_dir_in
from ..errors import Busy, Conflict, RestoreFailed, StorageFailed
from ..history.context import Context, RestoreOptions
from ..history.journal import Intent
from ..history.timeline import (
    ACTIVE,
    FORCED_REDO,
    FORCED_UNDO,
    UNDONE,
    RescuedVersion,
    Timeline,
    TurnRecord,
    now_rfc3339,
)
from ..results import HeadMoved, KeptFile, RestoreResult, SkippedPath
from ..snapshot.captured import Progress, Snapshot
from . import recovery
from .batches import (
    OtherSessions,
    changed_by_others,
    edited_between,
    left_by_last_undo,
    redo_step,
    redo_target_skipped,
    redo_turns,
    undo_batch,
)
from .keepreasons import left_out_of_target, target_ignored, target_rules, unsaved_reason
from .leftout import gone_left_out, unreadable_in
from .messages import failure_state, nothing, say_not_restored, say_rescued, which_turns
from .plan import (
    CHANGED_DURING_RESTORE,
    OTHER_SESSION,
    LeftByUndo,
    Plan,
    RestoreError,
    Step,
    apply_plan,
    compose,
    make_plan,
)
from .repositories import REPOSITORY_CREATED, is_held, repository_notes

__all__ = ["RestoreOptions", "Restorer"]


class Restorer:
    """Undo and redo over one work tree's repository, timelines and captures."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def plan(
        self,
        steps: list[Step],
        snap: Snapshot,
        options: RestoreOptions,
        check_conflicts: bool,
        operation: str,
        target_skipped: list[dict[str, str]],
        created: list[str] | None = None,
        left_by_undo: LeftByUndo | None = None,
        edited_between: frozenset[str] = frozenset(),
        others: OtherSessions | None = None,
        left_alone: dict[str, dict[str, str]] | None = None,
    ) -> Plan:
        """What the restore would do; raises Conflict unless forced. Nothing under a
        repository in `created` (made by the turns being undone) is touched, nor anything
        the target state's capture left out (`target_skipped`). `left_by_undo`: a path the
        last undo kept as the later turn left it (a repository that turn created) is no
        change of the user's. `edited_between`: paths the user changed between two of the
        turns undone together, conflicts as edits after the newest one are. `others`: what
        other sessions changed meanwhile (batches.py): kept as they left it, for them to
        undo, or, where it cannot be told whose it is, a conflict naming them. `left_alone`:
        a redo's paths its undo left alone, kept again with the undo's reason (the redo
        wrote back another session's file that undo had kept for it, after that session's
        own redo put it back)."""
        moves, passed = compose(steps)
        if left_by_undo is not None:
            for path, entry in left_by_undo.kept(list(moves)).items():
                passed.setdefault(path, set()).add(entry)
        current = self.ctx.repo[snap.tree]
        held: set[str] = set()
        # Taken out of the moves before planning: others' files, and what the undo left alone.
        kept_untouched: list[KeptFile] = []
        for path in [p for p in moves if is_held(p, created or [])]:
            if moves[path][1] is not None:
                continue  # there before the turns (the user's, say, in a folder the agent
                # ran `git init` in): put back like any file; the repository stays
            if entry_at(current, path) is not None:
                held.add(is_held(path, created or []))  # type: ignore[arg-type]
            del moves[path]
        others = others or OtherSessions()
        for path, session in sorted(others.kept.items()):
            if path in moves and entry_at(current, path) != moves[path][1]:
                if options.force:  # overwritten as a conflict is, and rescued with it
                    edited_between |= {path}
                    continue
                del moves[path]
                kept_untouched.append(KeptFile(path, OTHER_SESSION, session))
        for path, kept in sorted((left_alone or {}).items()):
            if moves.pop(path, None) is not None:
                kept_untouched.append(KeptFile(path, kept["reason"], kept.get("by")))
        edited_between |= {path for path in others.unclear if path in moves}
        rules = target_rules(self.ctx, steps[-1], moves)
        plan = make_plan(
            moves,
            current,
            str(self.ctx.ws.root),
            check_conflicts=check_conflicts,
            dirty=set(options.dirty),
            unsaved_reason=unsaved_reason(self.ctx, snap),
            ignored=self.ctx.scanner.ignored_untracked,
            target_ignored=target_ignored(self.ctx, rules),
            left_out_of_target=left_out_of_target(self.ctx, rules, target_skipped),
            unreadable_now=unreadable_in(snap),
            passed=passed,
            edited_between=edited_between,
        )
        plan.kept += [KeptFile(path, REPOSITORY_CREATED) for path in sorted(held)]
        plan.kept += kept_untouched
        if plan.conflicts and not options.force:
            raise Conflict(plan.conflicts, operation, frozenset(plan.unsaved), others.unclear)
        return plan

    def apply(
        self,
        operation: str,
        timeline: Timeline,
        plan: Plan,
        snap: Snapshot,
        saved_commit: str,
        final_target: pygit2.Tree | None,
    ) -> None:
        """Journal, write, make durable, commit the timeline, drop the journal."""
        ctx = self.ctx
        _check_objects(ctx.repo, plan.writes)  # before the journal: nothing written yet
        prepared = ctx.store.prepare(timeline)
        before = ctx.store.ref_target(timeline.session)
        intent = Intent(operation, timeline.session, plan.writes, saved_commit, before, prepared)
        writer = recovery.writer(ctx, ctx.journal.write(intent))
        # Before the journal's ref: a crash right after it finds a ledger that says nothing
        # was written yet, and rolls back nothing (the user's `git checkout` after such a
        # crash was undone by a rollback judging by content alone).
        writer.start_ledger()
        ctx.journal.begin(intent)
        saved = ctx.repo[snap.tree]
        try:
            left = apply_plan(
                writer, plan.writes, saved, lambda d: is_dir_in(final_target, d), snap.stamps
            )
        except RestoreError as failed:
            if failed.rolled_back:
                ctx.journal.end()  # else the next operation's recovery retries the rollback
            writer.drop_ledger(keep_file=not failed.rolled_back)
            raise RestoreFailed(
                f"{operation.capitalize()} failed: {failed}. {failure_state(failed)} "
                f"The saved state is commit {saved_commit}.",
                path=failed.path,
                rolled_back=failed.rolled_back,
                saved=saved_commit,
                kept=failed.kept,
            ) from failed
        if left:  # the user saved these after they were saved: theirs, left as they are
            plan.kept += [KeptFile(path, CHANGED_DURING_RESTORE) for path in left]
            untouched = set(left)
            plan.actions = [a for a in plan.actions if a.path not in untouched]
        make_durable(writer.touched)
        try:
            ctx.store.commit(timeline.session, prepared, operation)
        except (Busy, StorageFailed):
            writer.drop_ledger(keep_file=True)
            recovery.recover(ctx)  # the timeline never moved: put the files back, then say why
            raise
        ctx.journal.end()
        writer.drop_ledger()

    def _result(
        self,
        operation: str,
        timeline: Timeline,
        turns: list[TurnRecord],
        plan: Plan,
        dry: bool,
    ) -> RestoreResult:
        n = len(turns)
        what = f"{n} turn" + ("s" if n != 1 else "")
        files = len(plan.actions)
        verb = "Undid" if operation == "undo" else "Redid"
        message = (
            f"{'Would ' + operation if dry else verb} {what} "
            f"({files} file{'s' if files != 1 else ''} {'to change' if dry else 'changed'}"
            + (f", {len(plan.kept)} kept" if plan.kept else "")
            + f"): {which_turns(turns)} of session '{timeline.session}'"
        )
        return RestoreResult(
            operation=operation,
            count=n,
            turns=[t.to_result(timeline.session) for t in turns],
            files=list(plan.actions),
            kept=list(plan.kept),
            message=message,
            dry_run=dry,
        )

    def _head_note(self, result: RestoreResult, turn: TurnRecord) -> None:
        head = self.ctx.ws.head_commit()
        now = str(head) if head else None
        if turn.head != now:
            result.head_moved = HeadMoved(old_head=turn.head, new_head=now)
            result.message += (
                f". Note: HEAD moved since turn {turn.turn} "
                f"({(turn.head or 'unborn')[:10]} → {(now or 'unborn')[:10]}); "
                "turnback restored files only and left HEAD and branches alone"
            )

    # ---- undo --------------------------------------------------------------------------

    def undo(self, name: str, options: RestoreOptions, progress: Progress | None) -> RestoreResult:
        """Undoes the newest `options.count` active turns of session `name`."""
        timeline = self.ctx.store.load(name)
        if timeline is not None and options.turn is not None and not timeline.active:
            undo_batch(self.ctx, timeline, options)  # a named turn that is not active: -32602
        if not timeline or not timeline.active:
            return nothing("undo", "Nothing to undo", options.dry_run)
        batch = undo_batch(self.ctx, timeline, options)
        oldest, newest = batch[0], batch[-1]
        end = self.ctx.end_tree(timeline, newest)
        snap, paths = self._undo_capture(timeline, batch, end, progress)
        saved = self.ctx.snapshot_commit(
            snap, f"turnback: state replaced by undo of turn {oldest.turn}..{newest.turn}\n"
        )
        step = Step(paths, self.ctx.tree(newest.after), self.ctx.tree(oldest.before), oldest.before)
        notes = repository_notes(
            self.ctx.scanner, self.ctx.ws.root, oldest.repositories, oldest.turn
        )
        others = changed_by_others(self.ctx, timeline, batch, paths)
        plan = self.plan(
            [step],
            snap,
            options,
            newest.sealed,
            "undo",
            oldest.skipped,
            notes.created,
            left_by_last_undo(self.ctx, timeline, newest),
            edited_between(self.ctx, batch, paths),
            others,
        )
        seen = {k.path for k in plan.kept} | {a.path for a in plan.actions}
        left = self._left_out(timeline, oldest, newest, snap if end is None else None)
        plan.kept += [k for k in left if k.path not in seen]
        rescued: RescuedVersion | None = None
        if not options.dry_run:
            restored_at = now_rfc3339()
            for turn in batch:
                turn.state = UNDONE
                turn.batch = [oldest.turn, newest.turn]
                turn.replaced = turn.undo_kept = None
                turn.restored_at = restored_at
            newest.replaced = saved
            newest.undo_kept = [_kept_json(k) for k in plan.kept] or None
            if end is None:  # what the capture of "now" left out: a redo seals the turn there
                newest.after_skipped = [s.to_json() for s in snap.skipped]
            overwritten = _overwritten(plan)
            if options.force and overwritten:  # found even after a capture drops redo
                rescued = timeline.add_rescued(saved, FORCED_UNDO, overwritten)
            self.apply("undo", timeline, plan, snap, saved, step.target)
        result = self._result("undo", timeline, list(reversed(batch)), plan, options.dry_run)
        say_rescued(result, rescued)
        say_not_restored(result, self._gone_left_out(oldest.skipped, plan))
        self._head_note(result, oldest)
        if notes.changes:
            result.repository_changes = notes.changes
            result.message += notes.message()
        return result

    def _undo_capture(
        self,
        timeline: Timeline,
        batch: list[TurnRecord],
        end: pygit2.Tree | None,
        progress: Progress | None,
    ) -> tuple[Snapshot, set[str]]:
        """The state the undo replaces, and the paths the batch changed."""
        paths: set[str] = set()
        if end is None:
            # The newest turn ends "now": only a scan of the work tree says what changed.
            snap = self.ctx.capture_now(progress, None)
            now_tree = self.ctx.repo[snap.tree]
            for turn in batch:
                paths |= self.ctx.turn_changes(timeline, turn, now_tree)
            return snap, paths
        # Known end states: save just the files this undo will change.
        for turn in batch:
            paths |= self.ctx.turn_changes(timeline, turn, end)
        return self.ctx.capture_paths(end, paths), paths

    def _left_out(
        self,
        timeline: Timeline,
        oldest: TurnRecord,
        newest: TurnRecord,
        now: Snapshot | None,
    ) -> list[KeptFile]:
        """What the turns' captures left out that was not left out before them (a file too
        large, an excluded directory, a FIFO they made): an undo keeps these, and says so."""
        following = timeline.next_after(newest)
        if now is not None:
            end = [s.to_json() for s in now.skipped]
        elif newest.after_skipped is not None:
            end = newest.after_skipped
        elif following is not None:
            end = following.skipped
        else:
            return []
        before = {(s["path"], s["reason"]) for s in oldest.skipped}
        return [
            KeptFile(s["path"], s["reason"])
            for s in end
            if (s["path"], s["reason"]) not in before
            and os.path.lexists(self.ctx.ws.root / s["path"])
        ]

    # ---- redo --------------------------------------------------------------------------

    def redo(self, name: str, options: RestoreOptions) -> RestoreResult:
        """Redoes the oldest `options.count` undone turns of session `name`."""
        timeline = self.ctx.store.load(name)
        if timeline is not None and options.turn is not None and not timeline.undone:
            redo_turns(self.ctx, timeline, options)  # a named turn that is not undone: -32602
        if not timeline or not timeline.undone:
            return nothing("redo", "Nothing to redo", options.dry_run)
        turns = redo_turns(self.ctx, timeline, options)
        steps = [redo_step(self.ctx, timeline, turn) for turn in turns]
        touched = set().union(*(set(step.paths) for step in steps))
        snap = self.ctx.capture_paths(steps[0].expected, touched)
        saved = self.ctx.snapshot_commit(snap, "turnback: state replaced by redo\n")
        others = changed_by_others(self.ctx, timeline, turns, touched, redo=True)
        target_skipped = redo_target_skipped(timeline, turns[-1])
        left_alone = {k["path"]: k for turn in turns for k in turn.undo_kept or []}
        plan = self.plan(
            steps, snap, options, True, "redo", target_skipped, others=others, left_alone=left_alone
        )
        rescued: RescuedVersion | None = None
        if not options.dry_run:
            restored_at = now_rfc3339()
            for turn in turns:
                if turn.after is None and timeline.next_after(turn) is None:
                    # An open turn (captured by hand, never sealed) ends here now, at what
                    # the redo brings back: it ended "now", so a file the user made while it
                    # was undone became its own, for the next undo to delete.
                    turn.after, turn.sealed_at = turn.replaced, restored_at
                    turn.after_repositories = self.ctx.scanner.states()
                turn.state = ACTIVE
                turn.replaced = turn.undo_kept = None
                turn.batch = None
                turn.restored_at = restored_at
            overwritten = _overwritten(plan)
            if options.force and overwritten:
                rescued = timeline.add_rescued(saved, FORCED_REDO, overwritten)
            self.apply("redo", timeline, plan, snap, saved, steps[-1].target)
        result = self._result("redo", timeline, turns, plan, options.dry_run)
        say_rescued(result, rescued)
        say_not_restored(result, self._gone_left_out(target_skipped, plan))
        return result

    def _gone_left_out(self, target_skipped: list[dict[str, str]], plan: Plan) -> list[SkippedPath]:
        described = {k.path for k in plan.kept} | {a.path for a in plan.actions}
        return gone_left_out(str(self.ctx.ws.root), target_skipped, described)


def _check_objects(repo: pygit2.Repository, writes: dict[str, Entry | None]) -> None:
    """Every object a restore will write is in the repository: one lost from under the
    timeline (a loose object deleted, an alternate gc'ed) stops it before any write, where
    meeting it midway would leave files half restored. The KeyError is pygit2's, which
    the engine reports as `ObjectMissing` ("Nothing was changed")."""
    exists = repo.odb.exists
    for entry in writes.values():
        if entry is not None and entry.mode != FileMode.COMMIT and not exists(entry.oid):
            raise KeyError(f"object not found: {entry.oid}")


def _kept_json(kept: KeptFile) -> dict[str, str]:
    return {"path": kept.path, "reason": kept.reason} | ({"by": kept.by} if kept.by else {})


def _overwritten(plan: Plan) -> list[str]:
    """The conflicts whose files held the user's edits on disk: a conflict that is only an
    editor's unsaved text saved the file as it was on disk (the agent's bytes), and a
    rescue of that put the agent's text back under an undone turn. A conflict the plan
    keeps anyway (blocked: the user's folder where the turn had a file) is not overwritten."""
    kept = {k.path for k in plan.kept}
    return [path for path in plan.conflicts if path not in plan.unsaved and path not in kept]
