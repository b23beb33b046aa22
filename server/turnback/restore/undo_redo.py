"""Undo and redo: which files each turn changed, what to save, what to write.

Undoing turns sets exactly the files they changed to the oldest one's
snapshot, after saving what it replaces; redoing goes to the next turn's
snapshot, or for the newest turn to exactly what its undo replaced. The
engine holds the repository lock around both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from ..core.durability import make_durable
from ..core.repository import WorkspaceRepo
from ..core.treeops import entry_at, is_dir_in
from ..errors import Busy, Conflict, InvalidParams, RequestFailed, RestoreFailed
from ..history.journal import Intent
from ..history.timeline import ACTIVE, FORCED_REDO, FORCED_UNDO, UNDONE, Timeline, TurnRecord
from ..snapshot.ignore_rules import TreeIgnoreRules
from ..snapshot.scanner import Progress, Snapshot
from ..snapshot.untracked import NESTED_REPOSITORY
from .plan import KeptFile, Plan, RestoreError, Step, apply_plan, compose, make_plan
from .repositories import REPOSITORY_CREATED, is_held, repository_notes

if TYPE_CHECKING:
    from ..engine import Engine


@dataclass
class RestoreOptions:
    count: int = 1
    force: bool = False
    dry_run: bool = False
    #: Undo down to (redo up to) this turn, by number or id, instead of counting.
    turn: int | str | None = None
    #: Work-tree paths open in an editor with unsaved changes: never overwritten silently.
    dirty: frozenset[str] = frozenset()


class Restorer:
    """Undo and redo over one engine's repository, timelines and scanner."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _unsaved_reason(self, snap: Snapshot) -> Callable[[str], str]:
        reasons = {s.path: s.reason for s in snap.skipped}

        def reason(path: str) -> str:
            parts = path.split("/")
            for depth in range(len(parts), 0, -1):
                found = reasons.get("/".join(parts[:depth]))
                if found:
                    return found
            for depth in range(len(parts) - 1, 0, -1):
                if "/".join(parts[:depth]) in self.engine.scanner.members:
                    break  # inside a repository of the workspace: its files are saved
                if (self.engine.ws.root.joinpath(*parts[:depth]) / ".git").exists():
                    return NESTED_REPOSITORY
            return "notSaved"

        return reason

    def _ignored(self) -> Callable[[str], bool]:
        """Ignored (and untracked) under the rules of the repository holding the path."""
        return self.engine.scanner.ignored_untracked

    def _target_ignored(self, target: pygit2.Tree | None, moves: dict) -> Callable[[str], bool]:
        """Ignore rules of the target snapshot, evaluated only when a .gitignore moves."""
        if not any(p.rpartition("/")[2] == ".gitignore" for p in moves):
            return lambda _path: False
        rules = TreeIgnoreRules(self.engine.repo, target, _info_exclude(self.engine.ws))
        tracks = self.engine.scanner.tracks
        return lambda path: rules.is_ignored(path) and not tracks(path)

    def _plan(
        self,
        steps: list[Step],
        snap: Snapshot,
        options: RestoreOptions,
        check_conflicts: bool,
        operation: str,
        created: list[str] | None = None,
    ) -> Plan:
        """What the restore would do; raises Conflict unless forced. Nothing under a
        repository in `created` (made by the turns being undone) is touched."""
        moves = compose(steps)
        current = self.engine.repo[snap.tree]
        held: set[str] = set()
        for path in [p for p in moves if is_held(p, created or [])]:
            if entry_at(current, path) != moves[path][1]:
                held.add(is_held(path, created or []))  # type: ignore[arg-type]
            del moves[path]
        final_target = steps[-1].target
        plan = make_plan(
            moves,
            current,
            str(self.engine.ws.root),
            check_conflicts=check_conflicts,
            dirty=set(options.dirty),
            unsaved_reason=self._unsaved_reason(snap),
            ignored=self._ignored(),
            target_ignored=self._target_ignored(final_target, moves),
        )
        plan.kept += [KeptFile(path, REPOSITORY_CREATED) for path in sorted(held)]
        if plan.conflicts and not options.force:
            raise Conflict(plan.conflicts, operation)
        return plan

    def _apply(
        self,
        operation: str,
        timeline: Timeline,
        plan: Plan,
        snap: Snapshot,
        saved_commit: str,
        final_target: pygit2.Tree | None,
    ) -> None:
        """Journal, write, make durable, commit the timeline, drop the journal."""
        engine = self.engine
        prepared = engine.store.prepare(timeline)
        intent = Intent(
            operation,
            timeline.session,
            plan.writes,
            saved_commit,
            engine.store.ref_target(timeline.session),
            prepared,
        )
        writer = engine.writer(engine.journal.begin(intent))
        saved = engine.repo[snap.tree]
        try:
            apply_plan(writer, plan.writes, saved, lambda d: is_dir_in(final_target, d))
        except RestoreError as failed:
            if failed.rolled_back:
                engine.journal.end()  # else the next operation's recovery retries the rollback
            raise RestoreFailed(
                f"{operation.capitalize()} failed: {failed}. {_failure_state(failed)} "
                f"The saved state is commit {saved_commit}.",
                path=failed.path,
                rolledBack=failed.rolled_back,
                saved=saved_commit,
                kept=failed.kept,
            ) from failed
        make_durable(writer.touched)
        try:
            engine.store.commit(timeline.session, prepared)
        except Busy:
            engine.recover()  # the timeline never moved: put the files back, then say why
            raise
        engine.journal.end()

    def _result(
        self, timeline: Timeline, turns: list[TurnRecord], plan: Plan, verb: str, dry: bool
    ) -> dict[str, Any]:
        n = len(turns)
        what = f"{n} turn" + ("s" if n != 1 else "")
        files = len(plan.actions)
        message = (
            f"{'Would ' + verb.lower() if dry else verb} {what} "
            f"({files} file{'s' if files != 1 else ''} {'to change' if dry else 'changed'}"
            + (f", {len(plan.kept)} kept" if plan.kept else "")
            + ")"
        )
        return {
            "turns": [self.engine.turn_json(timeline, t) for t in turns],
            "files": [a.to_json() for a in plan.actions],
            "kept": [k.to_json() for k in plan.kept],
            "message": message,
            "dryRun": dry,
        }

    def _head_note(self, result: dict[str, Any], turn: TurnRecord) -> None:
        head = self.engine.ws.head_commit()
        now = str(head) if head else None
        if turn.head != now:
            result["headMoved"] = {"oldHead": turn.head, "newHead": now}
            result["message"] += (
                f". Note: HEAD moved since turn {turn.turn} "
                f"({(turn.head or 'unborn')[:10]} → {(now or 'unborn')[:10]}); "
                "turnback restored files only and left HEAD and branches alone"
            )

    def undo(self, name: str, options: RestoreOptions, progress: Progress | None) -> dict[str, Any]:
        """Undoes the newest `options.count` active turns of session `name`."""
        timeline = self.engine.store.load(name)
        active = timeline.active if timeline else []
        if not timeline or not active:
            return _nothing("turnsUndone", "Nothing to undo")
        if options.turn is not None:
            target = self.engine.find_turn(timeline, options.turn)
            if target.state != ACTIVE:
                raise InvalidParams("turn", f"turn {target.turn} is not active: nothing to undo")
            batch = [t for t in active if t.turn >= target.turn]
        else:
            batch = active[-options.count :]
        oldest, newest = batch[0], batch[-1]
        end = self.engine.end_tree(timeline, newest)
        paths: set[str] = set()
        if end is None:
            # The newest turn ends "now": only a scan of the work tree says what changed.
            snap = self.engine.capture_now(progress, None)
            now_tree = self.engine.repo[snap.tree]
            for turn in batch:
                paths |= self.engine.turn_changes(timeline, turn, now_tree)
        else:
            # Known end states: save just the files this undo will change.
            for turn in batch:
                paths |= self.engine.turn_changes(timeline, turn, end)
            snap = self.engine.capture_paths(end, paths)
        saved = self.engine.snapshot_commit(
            snap, f"turnback: state replaced by undo of turn {oldest.turn}..{newest.turn}\n"
        )
        step = Step(paths, self.engine.tree(newest.after), self.engine.tree(oldest.before))
        notes = repository_notes(
            self.engine.scanner, self.engine.ws.root, oldest.repositories, oldest.turn
        )
        plan = self._plan([step], snap, options, newest.sealed, "undo", notes.created)
        seen = {k.path for k in plan.kept} | {a.path for a in plan.actions}
        left_out = self.engine.left_out(timeline, oldest, newest, snap if end is None else None)
        plan.kept += [k for k in left_out if k.path not in seen]
        if not options.dry_run:
            for turn in batch:
                turn.state = UNDONE
                turn.batch = [oldest.turn, newest.turn]
                turn.replaced = None
            newest.replaced = saved
            if options.force and plan.conflicts:  # found even after a capture drops redo
                timeline.add_rescued(saved, FORCED_UNDO, plan.conflicts)
            self._apply("undo", timeline, plan, snap, saved, step.target)
        result = {
            "turnsUndone": len(batch),
            **self._result(timeline, list(reversed(batch)), plan, "Undid", options.dry_run),
        }
        self._head_note(result, oldest)
        if notes.changes:
            result["repositoryChanges"] = notes.changes
            result["message"] += notes.message()
        return result

    def redo(self, name: str, options: RestoreOptions) -> dict[str, Any]:
        """Redoes the oldest `options.count` undone turns of session `name`."""
        timeline = self.engine.store.load(name)
        undone = timeline.undone if timeline else []
        if not timeline or not undone:
            return _nothing("turnsRedone", "Nothing to redo")
        if options.turn is not None:
            target = self.engine.find_turn(timeline, options.turn)
            if target.state != UNDONE:
                raise InvalidParams("turn", f"turn {target.turn} is not undone: nothing to redo")
            turns = [t for t in undone if t.turn <= target.turn]
        else:
            turns = undone[: options.count]
        steps = []
        for turn in turns:
            low, high = turn.batch or [turn.turn, turn.turn]
            expected = self.engine.tree(turn.before)
            paths: set[str] = set()
            for member in timeline.turns:
                if low <= member.turn <= high:
                    # Undone turns always have a known end state: no scan needed.
                    paths |= self.engine.turn_changes(timeline, member, expected)
            following = timeline.next_after(turn)
            target = turn.replaced or (following.before if following else None)
            if target is None:  # never restore "nothing" over the work tree
                raise RequestFailed(f"Turn {turn.turn} has no state to redo to")
            steps.append(Step(paths, expected, self.engine.tree(target)))
        touched = set().union(*(set(step.paths) for step in steps))
        snap = self.engine.capture_paths(steps[0].expected, touched)
        saved = self.engine.snapshot_commit(snap, "turnback: state replaced by redo\n")
        plan = self._plan(steps, snap, options, True, "redo")
        if not options.dry_run:
            for turn in turns:
                turn.state = ACTIVE
                turn.replaced = None
                turn.batch = None
            if options.force and plan.conflicts:
                timeline.add_rescued(saved, FORCED_REDO, plan.conflicts)
            self._apply("redo", timeline, plan, snap, saved, steps[-1].target)
        result = {
            "turnsRedone": len(turns),
            **self._result(timeline, turns, plan, "Redid", options.dry_run),
        }
        return result


def _failure_state(failed: RestoreError) -> str:
    """What the work tree holds after a failed restore, said plainly."""
    if not failed.rolled_back:
        state = "The files already written were NOT yet rolled back; the next operation will."
    elif failed.written == 0:
        state = "Nothing was changed."
    else:
        n = failed.written
        state = f"The {n} file{'s were' if n != 1 else ' was'} already written: rolled back."
    if failed.kept:
        state += f" Changed meanwhile and left as they are: {', '.join(failed.kept)}."
    return state


def _nothing(count_key: str, message: str) -> dict[str, Any]:
    return {count_key: 0, "turns": [], "files": [], "kept": [], "message": message, "dryRun": False}


def _info_exclude(ws: WorkspaceRepo) -> list[str]:
    if ws.shadow:
        return []
    try:
        common = ws.lock_path.parent.parent
        return (common / "info" / "exclude").read_text(errors="replace").splitlines()
    except OSError:
        return []
