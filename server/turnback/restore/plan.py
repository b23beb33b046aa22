"""Plans and applies a restore: which files change, which are kept, what conflicts.

A plan maps each path to the entry the work tree should hold afterwards and
the entry it is expected to hold now. Applying is all-or-nothing for the user:
on any failure, every file already written is put back from the saved state,
except a file the user changed meanwhile, which is theirs and left as it is.
"""

from __future__ import annotations

import errno
import os
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pygit2

from ..core.ondisk import look
from ..core.treeops import Entry, entries_at, entry_at, is_dir_in
from ..core.worktree import Stamp, UnsafePath, check_path, in_work_tree, same_stamp
from ..results import FileAction, KeptFile
from ..snapshot.untracked import UNREADABLE
from .workwriter import ATTEMPTED, ChangedMeanwhile, WorkWriter

#: A kept reason: the user changed the file after the restore saved it, before it wrote.
CHANGED_DURING_RESTORE = "changedDuringRestore"
#: A kept reason (undo): another session's sealed turn changed the path while the undone
#: turns ran; it stays as that turn left it, for that session to undo (`by` names it).
OTHER_SESSION = "otherSession"
#: A kept reason: the path is another name of a file the restore keeps (`by` names it).
SAME_FILE = "sameFile"

MODIFIED = "modified"
CREATED = "created"
DELETED = "deleted"


@dataclass
class Step:
    """One turn's worth of a restore: move `paths` from `expected` to `target`."""

    paths: Iterable[str]
    expected: pygit2.Tree | None
    target: pygit2.Tree | None
    #: The target's snapshot commit, for the ignore rules it was captured under.
    target_at: str | None = None


@dataclass
class LeftByUndo:
    """What the last undo replaced, and the state it meant to leave: where the two differ,
    that undo kept the path as the later turn left it (a repository that turn created)."""

    replaced: pygit2.Tree | None
    meant: pygit2.Tree | None

    def kept(self, paths: list[str]) -> dict[str, Entry | None]:
        """Of `paths`, those the last undo kept, with what they still hold."""
        replaced, meant = entries_at(self.replaced, paths), entries_at(self.meant, paths)
        return {path: replaced[path] for path in paths if replaced[path] != meant[path]}


@dataclass
class Plan:
    writes: dict[str, Entry | None] = field(default_factory=dict)
    actions: list[FileAction] = field(default_factory=list)
    kept: list[KeptFile] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: The conflicts that are only an editor's unsaved text (the file on disk is as expected).
    unsaved: set[str] = field(default_factory=set)


def compose(
    steps: list[Step],
) -> tuple[dict[str, tuple[Entry | None, Entry | None]], dict[str, set[Entry | None]]]:
    """Path → (expected now, final target) across consecutive steps; and path → what the
    work tree holds there between the steps, no edit of the user's (an undo that kept a
    path, such as a repository the turn created, left it at such a state, so a redo of
    several turns must not call it a change made after them)."""
    states = _states(steps)
    moves = {path: (held[0], held[-1]) for path, held in states.items()}
    return moves, {path: set(held[1:-1]) for path, held in states.items() if len(held) > 2}


def _states(steps: list[Step]) -> dict[str, list[Entry | None]]:
    """Path → its entry before the first step that moves it, then after each such step."""
    out: dict[str, list[Entry | None]] = {}
    for step in steps:
        paths = list(step.paths)
        targets = entries_at(step.target, paths)
        expected = entries_at(step.expected, [p for p in paths if p not in out])
        for path in paths:
            out.setdefault(path, [expected.get(path)]).append(targets[path])
    return out


def make_plan(
    moves: dict[str, tuple[Entry | None, Entry | None]],
    current: pygit2.Tree,
    root: str,
    *,
    check_conflicts: bool,
    dirty: set[str],
    unsaved_reason: Callable[[str], str],
    ignored: Callable[[str], bool],
    target_ignored: Callable[[str], bool],
    left_out_of_target: Callable[[str], str | None],
    unreadable_now: Callable[[str], bool] = lambda _path: False,
    passed: dict[str, set[Entry | None]] | None = None,
    edited_between: frozenset[str] = frozenset(),
) -> Plan:
    """Decides, per path, write / delete / keep / conflict. `current` is the saved work tree.

    A path the target state does not hold is deleted only if that state could have held
    it: `left_out_of_target` names why it could not (the target's capture left it out, or
    ignore rules), and such a path is kept, since what stood there is not known. So is a
    path below a directory the saved state's capture may not list (`unreadable_now`)."""
    plan = Plan()
    current_entries = entries_at(current, moves)
    for path in sorted(moves):
        expected, target = moves[path]
        try:
            check_path(path)
        except UnsafePath:
            plan.kept.append(KeptFile(path, "unsafePath"))
            continue
        now = current_entries[path]
        full = os.path.join(root, path)
        on_disk = in_work_tree(root, path)
        if now == target and (on_disk or target is None):
            continue
        if unreadable_now(path):
            plan.kept.append(KeptFile(path, UNREADABLE))  # neither written nor deleted blind
            continue
        if on_disk and now is None and not (os.path.isdir(full) and not os.path.islink(full)):
            # There is something on disk that the saved state could not hold.
            plan.kept.append(KeptFile(path, unsaved_reason(path)))
            continue
        if on_disk and target is None and (left_out := left_out_of_target(path)):
            plan.kept.append(KeptFile(path, left_out))
            continue
        if on_disk and target is None and (kept := _kept_spelling(root, path, moves, current)):
            # One file under two names on a case-insensitive file system: deleting one
            # name would delete the file the other keeps.
            plan.kept.append(KeptFile(path, SAME_FILE, kept))
            continue
        if on_disk and target is not None and (ignored(path) or target_ignored(path)):
            # (A deletion asked `left_out_of_target`, whose rules cover both.)
            plan.kept.append(KeptFile(path, "ignored"))
            continue
        between = passed.get(path, ()) if passed else ()
        changed = check_conflicts and now != expected and now != target and now not in between
        changed = changed or (path in edited_between and now != target)
        if path in dirty or changed:
            plan.conflicts.append(path)  # asked first, even when it would be kept below
            if not changed:
                plan.unsaved.add(path)
        if target is not None and (blocker := _blocking_parent(root, path, moves, current)):
            # Something that is not ours to remove stands where a directory must be.
            plan.kept.append(KeptFile(path, "blocked", blocker))
            continue
        if target is not None and (stray := _left_below(full, path, moves)):
            # A directory stands where the file goes, holding what the plan does not remove.
            plan.kept.append(KeptFile(path, "blocked", stray))
            continue
        plan.writes[path] = target
        if target is None:
            plan.actions.append(FileAction(path, DELETED))
        elif now is None:
            plan.actions.append(FileAction(path, CREATED))
        else:
            plan.actions.append(FileAction(path, MODIFIED))
    return plan


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _kept_spelling(
    root: str, path: str, moves: dict[str, tuple[Entry | None, Entry | None]], current: pygit2.Tree
) -> str | None:
    """Another spelling of `path` (its letter case, or its Unicode normalization) that the
    saved state holds, that the restore keeps, and that names the same file on disk as
    `path`: on a file system that takes both names for one (macOS, Windows, WSL's Windows
    drives), deleting `path` would delete that file. None otherwise (the common case costs
    one tree lookup)."""
    parent, _, name = path.rpartition("/")
    try:
        folder = current[parent] if parent else current
    except KeyError:
        return None
    if not isinstance(folder, pygit2.Tree):
        return None
    folded = _fold(name)
    spellings = [e.name for e in folder if e.name != name and _fold(e.name) == folded]
    if not spellings:
        return None
    try:
        os.lstat(os.path.join(root, path))
        listed = set(os.listdir(os.path.join(root, parent) if parent else root))
    except OSError:
        return None
    for other in spellings:
        rel = f"{parent}/{other}" if parent else other
        keeps = moves[rel][1] if rel in moves else entry_at(current, rel)
        if keeps is None or (name in listed and other in listed):
            continue  # deleted too, or two files (hard links) that a deletion tells apart
        try:
            os.lstat(os.path.join(root, rel))
        except OSError:
            continue
        # Both spellings answer, and the folder does not list both: one file under two
        # names, whatever the inodes say (exFAT through FUSE gives each spelling its own).
        return rel
    return None


def _blocking_parent(
    root: str,
    path: str,
    moves: dict[str, tuple[Entry | None, Entry | None]],
    current: pygit2.Tree,
) -> str | None:
    """A parent of `path` on disk that is not a directory and that the plan may not remove.

    The plan may remove it only when it is itself being deleted and the saved state
    holds it (so redo or a rollback can bring it back).
    """
    parts = path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        full = os.path.join(root, parent)
        if not os.path.lexists(full):
            return None
        if os.path.isdir(full) and not os.path.islink(full):
            continue
        planned_delete = parent in moves and moves[parent][1] is None
        if planned_delete and entry_at(current, parent) is not None:
            return None
        return parent
    return None


def _left_below(
    full: str, path: str, moves: dict[str, tuple[Entry | None, Entry | None]]
) -> str | None:
    """Where a real directory stands at `path`: the first entry below it the plan does not
    delete (a file the user added there since), which the writer could not remove to put a
    file in its place. None when nothing is there, or the plan deletes all of it."""
    if not os.path.isdir(full) or os.path.islink(full):
        return None
    for folder, dirs, files in os.walk(full):
        rel = path + folder[len(full) :].replace(os.sep, "/")
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            below = f"{rel}/{name}"
            if below not in moves or moves[below][1] is not None:
                return below
        if not dirs and not files and folder != full:
            return rel  # an empty folder the user made: the writer removes only its own
    return None


class RestoreError(Exception):
    """Writing failed; `rolled_back` says whether the work tree is as it was."""

    def __init__(
        self, path: str, cause: BaseException, rolled_back: bool, written: int, kept: list[str]
    ) -> None:
        super().__init__(f"{describe(cause)} on {path}{flags_hint(cause)}")
        self.path = path
        self.cause = cause
        self.rolled_back = rolled_back
        #: How many files the restore had changed before it failed.
        self.written = written
        #: Files that changed under the restore: the user's, left as they are.
        self.kept = kept


def describe(cause: BaseException) -> str:
    """ "permission denied", not "[Errno 13] Permission denied: '/tmp/…/.turnback-….tmp'"."""
    if isinstance(cause, KeyboardInterrupt):
        return "interrupted"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[:1].lower() + cause.strerror[1:]
    return str(cause) or type(cause).__name__


def flags_hint(cause: BaseException) -> str:
    """What an EPERM (not EACCES) on a path the user owns most often means on Linux:
    `chattr +i` or `+a`, which no message names and which a rollback meets again."""
    if isinstance(cause, OSError) and cause.errno == errno.EPERM and sys.platform == "linux":
        return " (is the file or its folder immutable or append-only? `lsattr` shows it)"
    return ""


@dataclass
class Rollback:
    """What a rollback did: paths put back, paths left to the user, the first failure."""

    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: tuple[str, BaseException] | None = None


#: A path the ledger does not name: the restore never changed it.
_UNTOUCHED = object()


def _as_saved(writer: WorkWriter, path: str, saved: dict[str, Entry | None]) -> Stamp | None:
    """The stamp of `path` if it holds what the saved state holds; ChangedMeanwhile if not."""
    now = look(writer.root, path, writer.exec_bits)
    if not now.matches(saved[path]):
        raise ChangedMeanwhile(errno.EBUSY, "changed since it was saved", path)
    return now.stamp


def roll_back(writer: WorkWriter, writes: dict[str, Entry | None], saved: pygit2.Tree) -> Rollback:
    """Puts the saved state back wherever the disk holds what the restore wrote.

    Each path is compared with both states the restore knows: a path still as saved
    needs nothing; one as written is put back; one that matches neither was changed by
    the user since (or is a special file) and is left as it is. Each write re-checks the
    path at the last moment, so a user typing meanwhile is never overwritten.
    """
    result = Rollback()
    back: dict[str, tuple[Entry | None, object]] = {}
    saved_entries = entries_at(saved, writes)
    ledger = writer.ledger  # what the restore itself did, when known
    for path in writes:
        before = saved_entries[path]
        now = look(writer.root, path, writer.exec_bits)
        if now.matches(before):
            continue
        done = ATTEMPTED if ledger is None else ledger.get(path, _UNTOUCHED)
        if done is _UNTOUCHED or (done is not ATTEMPTED and not same_stamp(done, now.stamp)):
            # Not written by the restore, or rewritten since it was: the user's (a `git
            # reset --hard` after a crash writes the very bytes an undo was writing).
            result.kept.append(path)
        elif now.matches(writes[path]):
            back[path] = (before, now.stamp)
        else:
            result.kept.append(path)
    for path in _write_order({p: entry for p, (entry, _stamp) in back.items()}):
        entry, stamp = back[path]
        if entry is not None and _in_the_way(writer.root, path):
            result.kept.append(path)
            continue
        try:
            if entry is None:
                writer.delete(path, lambda d: is_dir_in(saved, d), expect=stamp)
            else:
                writer.write(path, entry, expect=stamp)
            result.restored.append(path)
        except ChangedMeanwhile:
            result.kept.append(path)
        except (OSError, UnsafePath, pygit2.GitError) as error:
            result.failed = result.failed or (path, error)
    result.kept.sort()
    return result


def _in_the_way(root: os.PathLike | str, path: str) -> bool:
    """Something a rollback did not write stands where it must write: a file or symlink
    where a parent directory must be, or a directory with something in it. A rollback
    never removes what it did not write (its own were deleted first)."""
    current = os.fspath(root)
    parts = path.split("/")
    for part in parts[:-1]:
        current = os.path.join(current, part)
        if not os.path.lexists(current):
            return False
        if os.path.islink(current) or not os.path.isdir(current):
            return True
    full = os.path.join(current, parts[-1])
    return os.path.isdir(full) and not os.path.islink(full) and bool(os.listdir(full))


def _write_order(writes: dict[str, Entry | None]) -> list[str]:
    """Deletes first, deepest first (a directory must empty before a file takes its
    place), then writes."""
    deletes = sorted((p for p, e in writes.items() if e is None), key=lambda p: -p.count("/"))
    return deletes + sorted(p for p, e in writes.items() if e is not None)


def apply_plan(
    writer: WorkWriter,
    writes: dict[str, Entry | None],
    saved: pygit2.Tree,
    target_tree: Callable[[str], bool],
    stamps: dict[str, Stamp | None],
) -> list[str]:
    """Deletes first (deepest first), then writes; rolls back from `saved` on failure.

    Each path is written only while it still holds what the saved state holds, checked
    again at the last moment before the rename or unlink: a file the user saved after the
    restore's capture read it (an editor saving during a 1,500-file undo) is left as it
    is, never overwritten unsaved. `stamps` are the saved paths' stamps as the capture read
    them; a path without one is read again and compared. Returns the paths left alone,
    which the restore did not change.
    """
    written = 0
    left: list[str] = []
    saved_entries = entries_at(saved, [p for p in writes if p not in stamps])
    try:
        for path in _write_order(writes):
            entry = writes[path]
            try:
                expect = stamps[path] if path in stamps else _as_saved(writer, path, saved_entries)
                if entry is None:
                    writer.delete(path, target_tree, expect=expect)
                else:
                    writer.write(path, entry, expect=expect)
            except ChangedMeanwhile:
                left.append(path)
                continue
            written += 1
    except (OSError, UnsafePath, pygit2.GitError, KeyboardInterrupt) as error:
        # Ctrl-C (and the CLI's SIGTERM and SIGHUP, raised as it) rolls back too: a second
        # one, or a kill, leaves the journal for the next command's recovery.
        undone = roll_back(writer, writes, saved)
        raise RestoreError(path, error, undone.failed is None, written, undone.kept) from error
    return left
