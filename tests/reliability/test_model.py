"""Model-based tests: random file operations, captures, undos, redos and restarts.

A hypothesis RuleBasedStateMachine drives a real git repository in a temporary folder,
with a second repository nested in it (`sub/`, one workspace: its files are part of
every turn), through the in-process Engine and, in a smaller variant, the real server
process, and checks every step against a model of what the user must see:

- the model keeps, per turn, the work tree as the user saw it at capture ("before") and
  at seal ("after") time, which turns are undone, which were undone together, and, for
  the newest turn of an undo, the work tree that undo replaced;
- a capture's snapshot holds exactly the user-visible files (ignored ones left out);
- undo changes exactly the files the undone turns changed (from each turn's snapshot to
  the state it left: its "after", else the next turn's snapshot, else the work tree now)
  and sets them to the oldest undone turn's snapshot; every other file, ignored files
  included, is left as it was;
- redo goes to the next turn's snapshot, or for the newest turn of an undo to exactly
  the state that undo replaced;
- a conflict is raised exactly when protocol.md says: undo, when the newest undone turn
  is sealed and a file undo would change differs from its "after" state; redo, always,
  when a file it would change differs from the state the undo left; force overrides;
- nothing outside the repository and nothing of the user's in either `.git` ever changes;
- a file a restore rewrites keeps the permission bits it had on disk, only the exec bit
  following the snapshot; a file it creates gets the umask default; no other file's bits
  change;
- a restore killed at any step (a real CLI process, SIGKILL) and followed by the user's
  edits is recovered by the next operation without writing over any of those edits: a
  path the user changed stays as the user left it, one still as the killed restore wrote
  it goes back (unless something of the user's stands in the way), and the timeline
  agrees with the files.

The model is deliberately small: a work tree is a dict path -> ("file", bytes, exec) or
("link", target), as helpers.tree_state reads it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from reliability_support import (
    PROFILE,
    PROFILE_NAME,
    Answer,
    ServerThread,
    dir_state,
    git_dir_state,
    record_figures,
    scaled,
    tree_files,
)

from helpers import SERVER_ENV, make_repo, tree_state
from turnback.engine import Engine, RestoreOptions
from turnback.errors import TurnbackError
from turnback.wire import INTERNAL_ERROR, error_code, error_data, to_wire

State = dict[str, tuple]

# ---- the playground ----------------------------------------------------------------------

INITIAL = {
    "README.md": "hello\n",
    "src/app.py": "print('v1')\n",
    ".gitignore": "*.log\nignored/\n",
}
#: A second repository nested in the first (committed on its own, untracked by the root):
#: one turn covers both, so its files are in every snapshot and every restore.
NESTED = "sub"
NESTED_INITIAL = {"s.txt": "nested\n", "e/t.txt": "nested t\n"}
#: Permission bits the initial files start with (git stores only the exec bit).
INITIAL_BITS = {"README.md": 0o600, "src/app.py": 0o444}
#: Paths the user and the agent touch. `d` and `d/e` are also file names, so files and
#: directories replace each other; `*.log` and `ignored/` are ignored by .gitignore.
POOL = [
    "a.txt",
    "b.txt",
    "d",
    "d/a.txt",
    "d/e",
    "d/e/f.txt",
    "src/app.py",
    "src/new.py",
    "README.md",
    "x.log",
    "d/y.log",
    "ignored/k.txt",
    "sub/s.txt",
    "sub/e/t.txt",
    "sub/new.txt",
]
DIRS = ["d", "d/e", "src", "ignored", "sub/e"]
CONTENTS = st.one_of(
    st.sampled_from([b"", b"one\n", b"two\n", b"\x00\x01\xfe", b"A" * 40, b"B" * 40]),
    st.binary(max_size=16),
)
#: Symlink targets: inside, dangling, and out of the repository (relative and absolute).
LINK_TARGETS = ["a.txt", "d", "nowhere", "../outside/o.txt", "@OUTSIDE", "@OUTSIDE/o.txt"]
SESSIONS = ["main", "main", "main", "other"]
#: Permission bits the user gives files (the exec bits stay as they were).
BITS = [0o600, 0o640, 0o444, 0o664]
USER_OPS = st.one_of(
    st.tuples(st.just("set_bits"), st.sampled_from(POOL), st.sampled_from(BITS)),
    st.tuples(st.just("write_file"), st.sampled_from(POOL), CONTENTS, st.booleans()),
    st.tuples(st.just("rewrite_same_size"), st.sampled_from(POOL)),
    st.tuples(st.just("delete"), st.sampled_from(POOL)),
    st.tuples(st.just("rename"), st.sampled_from(POOL), st.sampled_from(POOL)),
    st.tuples(st.just("chmod"), st.sampled_from(POOL)),
    st.tuples(st.just("symlink"), st.sampled_from(POOL), st.sampled_from(LINK_TARGETS)),
    st.tuples(st.just("rmdir"), st.sampled_from(DIRS)),
    st.tuples(st.just("mkdir"), st.sampled_from(DIRS)),
)
#: A turnback step first restarts the server (a fresh Engine, or a new process) this often.
RESTART_FIRST = st.sampled_from([False, False, False, False, True])
#: Undo and redo draw the same arguments.
RESTORE_ARGS = {
    "name": st.sampled_from(SESSIONS),
    "count": st.integers(1, 4),
    "force": st.booleans(),
    "dry_run": st.sampled_from([False, False, False, True]),
    "restart_first": RESTART_FIRST,
}
TURNS_PER_SESSION = 100  # the default setting
#: Killed restores per machine: each is a CLI process (about half a second).
KILLS_PER_MACHINE = 2

#: Totals over every machine run in this process, per driver, printed by the last test.
FIGURES: dict[str, dict[str, int]] = {}


def ignored(path: str) -> bool:
    parts = path.split("/")
    return parts[-1].endswith(".log") or "ignored" in parts[:-1]


def view(disk: State) -> State:
    """What a snapshot must hold: every file and symlink that git does not ignore."""
    return {p: v for p, v in disk.items() if not ignored(p)}


def changed(a: State, b: State) -> set[str]:
    return {p for p in a.keys() | b.keys() if a.get(p) != b.get(p)}


def _read_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


UMASK = _read_umask()


def permission_bits(root: Path) -> dict[str, int]:
    """Path -> permission bits of every regular file in the work tree (outside .git)."""
    bits: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            st_ = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISREG(st_.st_mode):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                bits[rel] = stat.S_IMODE(st_.st_mode) & 0o777
    return bits


def bits_after_restore(before: dict[str, int], written: dict[str, tuple | None]) -> dict:
    """What the permission bits must be after a restore wrote `written`: as editors do,
    a rewritten file keeps its bits and takes only the exec bit from the snapshot."""
    out = {p: b for p, b in before.items() if p not in written}
    for path, target in written.items():
        if target is None or target[0] != "file":
            continue
        executable, old = target[2], before.get(path)
        if old is None:
            out[path] = (0o755 if executable else 0o644) & ~UMASK
        else:
            out[path] = old | ((old & 0o444) >> 2) if executable else old & ~0o111
    return out


# ---- the model ---------------------------------------------------------------------------


@dataclass
class MTurn:
    number: int
    before: State
    after: State | None = None
    state: str = "active"
    #: On the newest turn of an undo: the user-visible work tree that undo replaced.
    replaced: State | None = None
    batch: tuple[int, int] | None = None


@dataclass
class MSession:
    turns: list[MTurn] = field(default_factory=list)
    next_number: int = 1

    @property
    def active(self) -> list[MTurn]:
        return [t for t in self.turns if t.state == "active"]

    @property
    def undone(self) -> list[MTurn]:
        return [t for t in self.turns if t.state == "undone"]

    def following(self, turn: MTurn) -> MTurn | None:
        return next((t for t in self.turns if t.number > turn.number), None)

    def end(self, turn: MTurn, now: State) -> State:
        """The state a turn left: its "after", the next turn's snapshot, what its undo
        replaced, else the work tree now."""
        if turn.after is not None:
            return turn.after
        nxt = self.following(turn)
        if nxt is not None:
            return nxt.before
        if turn.replaced is not None:
            return turn.replaced
        return now


@dataclass
class Prediction:
    """What a restore must do: the writes (path -> entry or None) and the conflicts."""

    count: int
    writes: dict[str, tuple | None]
    conflicts: list[str]
    failed: str | None = None  # a RequestFailed the spec demands (no state to redo to)
    #: Every path the restore moves, and whether the product saves only those paths
    #: (Scanner.capture_paths) rather than scanning the whole work tree.
    paths: set[str] = field(default_factory=set)
    saves_paths_only: bool = True

    def actions(self, now: State) -> set[tuple[str, str]]:
        out = set()
        for path, target in self.writes.items():
            if target is None:
                out.add((path, "deleted"))
            elif now.get(path) is None:
                out.add((path, "created"))
            else:
                out.add((path, "modified"))
        return out


# ---- known product bugs ------------------------------------------------------------------
#
# An entry names a bug pinned by a strict-xfail test in test_regressions.py, with the exact
# trigger the machine steps around (the step becomes a no-op, counted in the figures) so
# that it keeps looking for other bugs. Delete the entry when the bug is fixed. The ones
# found so far (tree_with dropping a file that replaced a directory, a restore deleting a
# user file in the way of a directory, the watcher's capture dropping such a file) are
# fixed: none is listed.
KNOWN_BUGS: dict = {}


def predict_undo(session: MSession, count: int, now: State) -> tuple[Prediction, list[MTurn]]:
    active = session.active
    if not active:
        return Prediction(0, {}, []), []
    batch = active[-count:]
    oldest, newest = batch[0], batch[-1]
    paths: set[str] = set()
    for turn in batch:
        paths |= changed(turn.before, session.end(turn, now))
    target = {p: oldest.before.get(p) for p in paths}
    conflicts: set[str] = set()
    if newest.after is not None:
        conflicts = {
            p for p in paths if now.get(p) != newest.after.get(p) and now.get(p) != target[p]
        }
    # An edit the user made between two of the turns (after one was sealed, before the
    # next began) is the user's: undone together, it would go unnoticed.
    for turn, following in pairwise(batch):
        if turn.after is not None:
            conflicts |= {
                p
                for p in paths
                if turn.after.get(p) != following.before.get(p) and now.get(p) != target[p]
            }
    writes = {p: target[p] for p in paths if now.get(p) != target[p]}
    ends_now = newest.after is None and session.following(newest) is None
    return Prediction(len(batch), writes, sorted(conflicts), None, paths, not ends_now), batch


def predict_redo(session: MSession, count: int, now: State) -> tuple[Prediction, list[MTurn]]:
    undone = session.undone
    if not undone:
        return Prediction(0, {}, []), []
    turns = undone[:count]
    expected: dict[str, tuple | None] = {}
    final: dict[str, tuple | None] = {}
    for turn in turns:
        low, high = turn.batch or (turn.number, turn.number)
        paths: set[str] = set()
        for member in session.turns:
            if low <= member.number <= high:
                paths |= changed(member.before, session.end(member, turn.before))
        nxt = session.following(turn)
        target = turn.replaced if turn.replaced is not None else (nxt.before if nxt else None)
        if target is None:
            return Prediction(len(turns), {}, [], failed="failed"), turns
        for p in paths:
            expected.setdefault(p, turn.before.get(p))
            final[p] = target.get(p)
    conflicts = sorted(p for p in final if now.get(p) != expected[p] and now.get(p) != final[p])
    writes = {p: t for p, t in final.items() if now.get(p) != t}
    return Prediction(len(turns), writes, conflicts, None, set(final)), turns


# ---- drivers: the in-process engine, or the real server ----------------------------------


class EngineDriver:
    """The engine in this process; a restart is a fresh Engine object on the folder."""

    name = "engine"

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.engine = Engine(str(repo))

    def restart(self) -> None:
        self.engine = Engine(str(self.repo))

    def close(self) -> None:
        pass

    def _call(self, fn, *args: Any, **kwargs: Any) -> Answer:  # noqa: ANN001
        try:
            return Answer(result=to_wire(fn(*args, **kwargs)))
        except TurnbackError as error:
            return Answer(code=error_code(error), message=error.message, data=error_data(error))

    def capture(self, session: str, phase: str) -> Answer:
        return self._call(self.engine.capture, session=session, label=None, phase=phase)

    def restore(self, op: str, session: str, count: int, force: bool, dry_run: bool) -> Answer:
        options = RestoreOptions(count=count, force=force, dry_run=dry_run)
        return self._call(getattr(self.engine, op), session, options)

    def list(self, session: str) -> Answer:
        return self._call(self.engine.list, session)


class ServerDriver:
    """The real server process over stdio; a restart stops it and starts a new one."""

    name = "server"

    def __init__(self, repo: Path) -> None:
        self.server = ServerThread(repo)

    def restart(self) -> None:
        self.server.restart()

    def close(self) -> None:
        self.server.close()

    def capture(self, session: str, phase: str) -> Answer:
        return self.server.call("snapshot/capture", {"session": session, "phase": phase})

    def restore(self, op: str, session: str, count: int, force: bool, dry_run: bool) -> Answer:
        params = {"session": session, "count": count, "force": force, "dryRun": dry_run}
        return self.server.call(f"snapshot/{op}", params)

    def list(self, session: str) -> Answer:
        return self.server.call("snapshot/list", {"session": session})


def read_timeline(repo_root: Path, session: str) -> tuple[pygit2.Repository, dict | None]:
    """The session's timeline (header and every turn blob under `turns/`), read with
    pygit2 independently of the engine."""
    import json

    repo = pygit2.Repository(str(repo_root))
    ref = repo.references.get(f"refs/turnback/main/sessions/{session}")
    if ref is None:
        return repo, None
    tree = repo[ref.target].tree
    timeline = json.loads(repo[tree["session.json"].id].data)
    stack = [repo[tree["turns"].id]] if "turns" in tree else []
    turns = []
    while stack:
        for entry in stack.pop():
            if entry.type_str == "tree":
                stack.append(repo[entry.id])
            else:
                turns.append(json.loads(repo[entry.id].data))
    timeline["turns"] = sorted(turns, key=lambda t: t["turn"])
    return repo, timeline


def snapshot_state(repo: pygit2.Repository, commit: str) -> State:
    return tree_files(repo, repo[pygit2.Oid(hex=commit)].tree)


# ---- the state machine -------------------------------------------------------------------


class TurnbackMachine(RuleBasedStateMachine):
    driver_cls: type = EngineDriver

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="turnback-model-"))
        self.repo = make_repo(self.tmp / "repo", INITIAL)
        make_repo(self.repo / NESTED, NESTED_INITIAL)
        for path, bits in INITIAL_BITS.items():  # what restores rewrite must keep its bits
            os.chmod(self.full(path), bits)
        self.outside = self.tmp / "outside"
        (self.outside / "sub").mkdir(parents=True)
        (self.outside / "o.txt").write_text("outside, never touched\n")
        (self.outside / "sub" / "p.txt").write_text("outside too\n")
        self.outside_before = dir_state(self.tmp, skip=lambda rel: rel.startswith("repo"))
        self.git_before = git_dir_state(self.repo)
        self.nested_git_before = git_dir_state(self.repo / NESTED)
        self.driver = self.driver_cls(self.repo)
        self.sessions: dict[str, MSession] = {}
        self.kills = 0
        self.figures = FIGURES.setdefault(self.driver.name, {})
        self.bump("machines")

    def bump(self, name: str, by: int = 1) -> None:
        self.figures[name] = self.figures.get(name, 0) + by

    def teardown(self) -> None:
        try:
            self.driver.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- helpers -------------------------------------------------------------------------

    def full(self, rel: str) -> Path:
        return self.repo.joinpath(*rel.split("/"))

    def real_parents(self, rel: str) -> bool:
        current = self.repo
        for part in rel.split("/")[:-1]:
            current = current / part
            if os.path.islink(current) or not current.is_dir():
                return False
        return True

    def make_parents(self, rel: str) -> None:
        """The user turns whatever is in the way into directories (never writes through)."""
        current = self.repo
        for part in rel.split("/")[:-1]:
            current = current / part
            if os.path.islink(current) or (os.path.lexists(current) and not current.is_dir()):
                os.unlink(current)
            if not os.path.lexists(current):
                os.mkdir(current)

    def clear(self, rel: str) -> None:
        full = self.full(rel)
        if os.path.islink(full) or full.is_file():
            os.unlink(full)
        elif full.is_dir():
            shutil.rmtree(full)

    def link_target(self, target: str) -> str:
        return target.replace("@OUTSIDE", str(self.outside))

    def session(self, name: str) -> MSession:
        return self.sessions.setdefault(name, MSession())

    def fail(self, what: str, **details: Any) -> None:
        lines = [what] + [f"  {k}: {v!r}" for k, v in details.items()]
        raise AssertionError("\n".join(lines))

    def expect_ok(self, answer: Answer, what: str) -> Any:
        if answer.code == INTERNAL_ERROR:
            self.fail(f"{what}: internal error", message=answer.message)
        if not answer.ok:
            self.fail(f"{what}: unexpected error", code=answer.code, message=answer.message)
        return answer.result

    def check_listing(self, name: str) -> None:
        """The timeline the product lists is the model's: numbers, states, seals."""
        listed = self.expect_ok(self.driver.list(name), "list")
        got = [(t["turn"], t["state"], t["sealed"]) for t in listed["turns"]]
        model = self.sessions.get(name, MSession())
        want = [(t.number, t.state, t.after is not None) for t in reversed(model.turns)]
        if got != want:
            self.fail("the listed timeline differs from the model", got=got, want=want)

    def check_snapshot(self, name: str, number: int, field_: str, want: State) -> None:
        repo, timeline = read_timeline(self.repo, name)
        assert timeline is not None
        record = next(t for t in timeline["turns"] if t["turn"] == number)
        got = snapshot_state(repo, record[field_])
        if got != want:
            self.fail(
                f"the {field_} snapshot of turn {number} is not the work tree",
                missing_or_wrong={p: want.get(p) for p in changed(got, want)},
                snapshot_has={p: got.get(p) for p in changed(got, want)},
            )

    # ---- the user's file operations ------------------------------------------------------

    def op_write_file(self, path: str, content: bytes, executable: bool) -> None:
        self.make_parents(path)
        full = self.full(path)
        if os.path.islink(full) or full.is_dir():
            self.clear(path)
        new = not full.exists()
        full.write_bytes(content)
        if new:  # new files get odd bits, which every restore that rewrites them must keep
            os.chmod(full, BITS[len(content) % len(BITS)])
        mode = os.stat(full).st_mode
        os.chmod(full, mode | 0o111 if executable else mode & ~0o111)

    def op_rewrite_same_size(self, path: str) -> None:
        """Same size, within the same second: only a content hash can see the change."""
        full = self.full(path)
        if not self.real_parents(path) or os.path.islink(full) or not full.is_file():
            return
        data = full.read_bytes()
        full.write_bytes(bytes((b + 1) % 256 for b in data) if data else b"")

    def op_delete(self, path: str) -> None:
        full = self.full(path)
        if self.real_parents(path) and (os.path.islink(full) or full.is_file()):
            os.unlink(full)

    def op_rename(self, source: str, dest: str) -> None:
        src = self.full(source)
        if (
            source == dest
            or dest.startswith(source + "/")
            or source.startswith(dest + "/")
            or not self.real_parents(source)
            or not (os.path.islink(src) or src.is_file())
        ):
            return
        self.make_parents(dest)
        if not os.path.lexists(src):  # the source was in the way of dest's parents
            return
        self.clear(dest)
        os.rename(src, self.full(dest))

    def op_chmod(self, path: str) -> None:
        full = self.full(path)
        if self.real_parents(path) and not os.path.islink(full) and full.is_file():
            mode = os.stat(full).st_mode
            os.chmod(full, mode & ~0o111 if mode & stat.S_IXUSR else mode | 0o111)

    def op_set_bits(self, path: str, bits: int) -> None:
        full = self.full(path)
        if self.real_parents(path) and not os.path.islink(full) and full.is_file():
            executable = os.stat(full).st_mode & stat.S_IXUSR
            os.chmod(full, bits | ((bits & 0o444) >> 2) if executable else bits)

    def op_symlink(self, path: str, points_to: str) -> None:
        self.make_parents(path)
        self.clear(path)
        os.symlink(self.link_target(points_to), self.full(path))

    def op_rmdir(self, path: str) -> None:
        full = self.full(path)
        if self.real_parents(path) and not os.path.islink(full) and full.is_dir():
            shutil.rmtree(full)

    def op_mkdir(self, path: str) -> None:
        self.make_parents(path + "/x")

    @rule(ops=st.lists(USER_OPS, min_size=1, max_size=4))
    def edit(self, ops: list[tuple]) -> None:
        """The user or the agent edits files: a few operations per step."""
        for kind, *args in ops:
            getattr(self, f"op_{kind}")(*args)
            self.bump("file_operations")

    # ---- turnback ------------------------------------------------------------------------

    @initialize(edits=st.lists(USER_OPS, min_size=1, max_size=5), seal=st.booleans())
    def first_turn(self, edits: list[tuple], seal: bool) -> None:
        self.agent_turn("main", edits, seal, False)

    @rule(
        name=st.sampled_from(SESSIONS),
        edits=st.lists(USER_OPS, min_size=1, max_size=5),
        seal=st.booleans(),
        restart_first=RESTART_FIRST,
    )
    def agent_turn(self, name: str, edits: list[tuple], seal: bool, restart_first: bool) -> None:
        """What a harness does: capture before the turn, the agent edits, capture after."""
        self.capture_before(name, restart_first)
        self.edit(edits)
        if seal:
            self.capture_after(name, False)

    @rule(
        name=st.sampled_from(SESSIONS),
        count=st.integers(1, 3),
        edits_between=st.lists(USER_OPS, max_size=2),
        force=st.booleans(),
        restart_between=RESTART_FIRST,
    )
    def undo_edit_redo(
        self, name: str, count: int, edits_between: list, force: bool, restart_between: bool
    ) -> None:
        """Undo, maybe edit (a conflict for redo), maybe restart, then redo."""
        self.restore("undo", name, count, force, False)
        if edits_between:
            self.edit(edits_between)
        self.maybe_restart(restart_between)
        self.restore("redo", name, count, force, False)

    @rule(name=st.sampled_from(SESSIONS), restart_first=RESTART_FIRST)
    def capture_before(self, name: str, restart_first: bool) -> None:
        self.maybe_restart(restart_first)
        now = view(tree_state(self.repo))
        session = self.session(name)
        result = self.expect_ok(self.driver.capture(name, "before"), "capture before")
        self.bump("captures")
        if result["turn"] != session.next_number or result["state"] != "active":
            self.fail("capture numbered the turn wrongly", got=result, want=session.next_number)
        session.turns = [t for t in session.active] + [MTurn(session.next_number, now)]
        session.turns = session.turns[-TURNS_PER_SESSION:]
        session.next_number += 1
        self.check_snapshot(name, result["turn"], "before", now)
        self.check_listing(name)

    @rule(name=st.sampled_from(SESSIONS), restart_first=RESTART_FIRST)
    def capture_after(self, name: str, restart_first: bool) -> None:
        self.maybe_restart(restart_first)
        now = view(tree_state(self.repo))
        session = self.session(name)
        answer = self.driver.capture(name, "after")
        self.bump("captures")
        if not session.active or session.undone:
            # (With the newest turn undone, the "after" is that turn's: never an older one's.)
            if answer.ok or (answer.data or {}).get("reason") != "noOpenTurn":
                self.fail(
                    "an after capture with no active turn, or with the newest undone, must "
                    "fail with noOpenTurn",
                    a=answer,
                )
            return
        result = self.expect_ok(answer, "capture after")
        turn = session.active[-1]
        if result["turn"] != turn.number or not result["sealed"]:
            self.fail("capture after sealed the wrong turn", got=result, want=turn.number)
        turn.after = now
        self.check_snapshot(name, turn.number, "after", now)
        self.check_listing(name)

    @rule(**RESTORE_ARGS)
    def undo(self, name: str, count: int, force: bool, dry_run: bool, restart_first: bool):
        self.maybe_restart(restart_first)
        self.restore("undo", name, count, force, dry_run)

    @rule(**RESTORE_ARGS)
    def redo(self, name: str, count: int, force: bool, dry_run: bool, restart_first: bool):
        self.maybe_restart(restart_first)
        self.restore("redo", name, count, force, dry_run)

    @precondition(lambda self: self.kills < KILLS_PER_MACHINE)
    @rule(
        op=st.sampled_from(["undo", "undo", "redo"]),
        name=st.sampled_from(["main"]),
        count=st.integers(1, 3),
        step=st.integers(1, 7),
        edits=st.lists(USER_OPS, min_size=1, max_size=4),
    )
    def killed_restore_then_user_edits(
        self, op: str, name: str, count: int, step: int, edits: list[tuple]
    ) -> None:
        """A restore (a real CLI process) SIGKILLed after its `step`-th durable step, the
        user's edits, then the next operation recovers without writing over them."""
        disk = tree_state(self.repo)
        now = view(disk)
        session = self.session(name)
        predict = predict_undo if op == "undo" else predict_redo
        prediction, turns = predict(session, count, now)
        if prediction.failed or not turns:
            return
        self.kills += 1
        timeline_ref = self.session_ref(name)
        self.bump("kills" if self.run_killed(op, name, count, step) else "kills_too_late")
        journal = self.journal_paths()
        committed = self.session_ref(name) != timeline_ref
        mid = tree_state(self.repo)
        for path in changed(disk, mid):
            if path not in prediction.writes or mid.get(path) != prediction.writes[path]:
                self.fail("a killed restore left a path in neither state", path=path)
        before_edits = self.inode_changes(journal)
        self.edit(edits)
        edited = tree_state(self.repo)
        # A chmod the state tuples do not show (0644 -> 0600, or to the bits it had: its
        # ctime moves) is an edit of the user's too, and recovery keeps it as one.
        after_edits = self.inode_changes(journal)
        rebitted = {p for p in after_edits if before_edits.get(p) != after_edits[p]}
        self.expect_ok(self.driver.list(name), "the operation after a kill (recovers)")
        got = tree_state(self.repo)
        if committed:
            self.expect_unchanged(edited, got, "recovery of a committed restore")
            self.apply_to_model(op, session, turns, now)
        else:
            self.expect_recovered(disk, edited, got, journal, prediction.writes, rebitted)
        self.check_listing(name)

    def run_killed(self, op: str, name: str, count: int, step: int) -> bool:
        """The restore in its own process, killed after `step` durable steps."""
        done = subprocess.run(
            [sys.executable, "-m", "turnback", op, "--session", name, "-n", str(count)]
            + ["--force"],
            cwd=self.repo,
            env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": str(step)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode not in (0, 1, -signal.SIGKILL):
            self.fail("a killed restore crashed otherwise", stderr=done.stderr)
        return done.returncode == -signal.SIGKILL

    def session_ref(self, name: str) -> str | None:
        ref = pygit2.Repository(str(self.repo)).references.get(
            f"refs/turnback/main/sessions/{name}"
        )
        return str(ref.target) if ref is not None else None

    def journal_paths(self) -> set[str]:
        """The paths a killed restore's journal names (none when it died outside one)."""
        repo = pygit2.Repository(str(self.repo))
        ref = repo.references.get("refs/turnback/main/journal")
        if ref is None:
            return set()
        data = json.loads(repo[repo[ref.target].tree["journal.json"].id].data)
        return set(data["writes"])

    def inode_changes(self, paths: set[str]) -> dict[str, tuple[int, int]]:
        """Each path's mode and ctime, where a file (not a link) stands there."""
        found = {}
        for path in paths:
            try:
                st = os.lstat(self.full(path))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found[path] = (st.st_mode, st.st_ctime_ns)
        return found

    def expect_recovered(
        self,
        disk: State,
        edited: State,
        got: State,
        journal: set[str],
        writes: dict,
        rebitted: set[str] = frozenset(),
    ) -> None:
        """A rolled-back restore: the user's edits all stand (a chmod too: `rebitted`); a
        journal path still as the restore wrote it is back as it was, unless the user's
        things are in its way."""
        for path in changed(edited, got):
            if path not in journal:
                self.fail("recovery touched a path outside the journal", path=path)
        for path in journal:
            if edited.get(path) != writes.get(path) or path in rebitted:
                if got.get(path) != edited.get(path):
                    self.fail("recovery wrote over the user's edit", path=path)
                self.bump("recovery_kept_users_edit")
            elif got.get(path) != disk.get(path):
                if got.get(path) != edited.get(path) or not self.in_the_way(path):
                    self.fail(
                        "recovery did not put a path back",
                        path=path,
                        got=got.get(path),
                        was=disk.get(path),
                    )
                self.bump("recovery_kept_in_the_way")

    def in_the_way(self, path: str) -> bool:
        """A file or symlink where a parent directory of `path` must be, or a directory."""
        full = self.full(path)
        return not self.real_parents(path) or (full.is_dir() and not full.is_symlink())

    def maybe_restart(self, restart_first: bool) -> None:
        if restart_first and self.may_restart():
            self.driver.restart()
            self.bump("restarts")

    def may_restart(self) -> bool:
        return True

    def restore(self, op: str, name: str, count: int, force: bool, dry_run: bool) -> None:
        disk = tree_state(self.repo)
        bits = permission_bits(self.repo)
        now = view(disk)
        session = self.session(name)
        predict = predict_undo if op == "undo" else predict_redo
        prediction, turns = predict(session, count, now)
        for bug, triggers in KNOWN_BUGS.items():
            if triggers(prediction, disk):
                self.bump(f"steps_skipped_known_bug_{bug}")
                return
        answer = self.driver.restore(op, name, count, force, dry_run)
        self.bump(f"{op}s")
        after = tree_state(self.repo)
        context = {"op": op, "count": count, "force": force, "dry_run": dry_run}

        if answer.code == INTERNAL_ERROR:
            self.fail(f"{op}: internal error", message=answer.message, **context)
        if prediction.failed:
            if answer.ok or (answer.data or {}).get("reason") != prediction.failed:
                self.fail(f"{op} must fail ({prediction.failed})", answer=answer, **context)
            return
        if prediction.conflicts and not force:
            data = answer.data or {}
            if answer.ok or data.get("reason") != "conflict":
                self.fail(
                    f"{op} must refuse with a conflict",
                    conflicts=prediction.conflicts,
                    answer=answer,
                    **context,
                )
            if sorted(data.get("files", [])) != prediction.conflicts:
                self.fail(
                    f"{op} named the wrong conflicts",
                    got=data.get("files"),
                    want=prediction.conflicts,
                )
            self.bump("conflicts")
            self.expect_unchanged(disk, after, f"a refused {op}")
            self.check_listing(name)
            return
        if not answer.ok and (answer.data or {}).get("reason") == "restoreFailed":
            blocked = [
                p
                for p, target in prediction.writes.items()
                if target is not None and self.full(p).is_dir() and not os.path.islink(self.full(p))
            ]
            if not blocked or not answer.data.get("rolledBack"):
                self.fail(f"{op} failed where it should not", answer=answer, **context)
            self.bump("restore_failed_dir_in_the_way")
            self.expect_unchanged(disk, after, f"a failed {op}")
            self.expect_bits(bits, {}, f"a failed {op}")
            self.check_listing(name)
            return
        result = self.expect_ok(answer, op)
        key = "turnsUndone" if op == "undo" else "turnsRedone"
        if result[key] != prediction.count:
            self.fail(f"{op} changed the wrong number of turns", got=result, want=prediction.count)
        kept = {k["path"] for k in result["kept"]}
        reported = {(f["path"], f["action"]) for f in result["files"]}
        want_actions = {(p, a) for p, a in prediction.actions(now) if p not in kept}
        if reported != want_actions or not kept <= set(prediction.writes):
            self.fail(
                f"{op} reported the wrong files",
                got=sorted(reported),
                want=sorted(want_actions),
                kept=result["kept"],
                **context,
            )
        if dry_run:
            self.expect_unchanged(disk, after, f"a dry-run {op}")
            self.check_listing(name)
            return
        expected = dict(disk)
        for path, target in prediction.writes.items():
            if path in kept:
                continue
            if target is None:
                expected.pop(path, None)
            else:
                expected[path] = target
        if after != expected:
            diff = changed(after, expected)
            self.fail(
                f"after {op} the work tree is not what the model says",
                **context,
                paths=sorted(diff),
                on_disk={p: after.get(p) for p in sorted(diff)},
                expected={p: expected.get(p) for p in sorted(diff)},
                before_op={p: disk.get(p) for p in sorted(diff)},
                turn_files=sorted(prediction.writes),
                kept=sorted(kept),
            )
        written = {p: t for p, t in prediction.writes.items() if p not in kept}
        self.expect_bits(bits, written, op)
        self.bump(f"{op}_turns", prediction.count)
        self.bump(f"{op}_files_written", len(prediction.writes) - len(kept))
        self.bump("kept", len(kept))
        self.apply_to_model(op, session, turns, now)
        self.check_listing(name)

    def apply_to_model(self, op: str, session: MSession, turns: list[MTurn], now: State) -> None:
        if not turns:
            return
        if op == "undo":
            for turn in turns:
                turn.state = "undone"
                turn.batch = (turns[0].number, turns[-1].number)
                turn.replaced = None
            turns[-1].replaced = now
        else:
            for turn in turns:
                if turn.after is None and turn is session.turns[-1]:
                    turn.after = turn.replaced  # an open turn ends at what its redo put back
                turn.state = "active"
                turn.replaced = None
                turn.batch = None

    def expect_bits(self, before: dict[str, int], written: dict, what: str) -> None:
        got, want = permission_bits(self.repo), bits_after_restore(before, written)
        defaults = {0o644 & ~UMASK, 0o755 & ~UMASK}
        self.bump("odd_bits_rewritten", sum(before.get(p, 0o644) not in defaults for p in written))
        if got != want:
            paths = sorted(p for p in got.keys() | want.keys() if got.get(p) != want.get(p))
            self.fail(
                f"after {what} the permission bits are wrong",
                got={p: oct(got[p]) if p in got else None for p in paths},
                want={p: oct(want[p]) if p in want else None for p in paths},
            )

    def expect_unchanged(self, disk: State, after: State, what: str) -> None:
        if after != disk:
            diff = changed(after, disk)
            self.fail(
                f"{what} changed the work tree",
                on_disk={p: after.get(p) for p in diff},
                was={p: disk.get(p) for p in diff},
            )

    # ---- after every step ----------------------------------------------------------------

    @invariant()
    def nothing_outside_or_in_git_changes(self) -> None:
        outside = dir_state(self.tmp, skip=lambda rel: rel.startswith("repo"))
        if outside != self.outside_before:
            self.fail(
                "something outside the repository changed",
                paths=sorted(changed(outside, self.outside_before)),
            )
        git_now = git_dir_state(self.repo)
        if git_now != self.git_before:
            self.fail(
                "the user's .git changed (HEAD, index, refs, config, hooks...)",
                paths=sorted(changed(git_now, self.git_before)),
            )
        nested_now = git_dir_state(self.repo / NESTED)
        if nested_now != self.nested_git_before:
            self.fail(
                "the nested repository's .git changed",
                paths=sorted(changed(nested_now, self.nested_git_before)),
            )
        stray = [p for p in tree_state(self.repo) if ".turnback-" in p]
        if stray:
            self.fail("temporary files left in the work tree", paths=stray)

    @invariant()
    def count_steps(self) -> None:
        self.bump("steps")


class ServerMachine(TurnbackMachine):
    """The same model through the real server process; a restart is a new process."""

    driver_cls = ServerDriver

    def may_restart(self) -> bool:
        return self.driver.server.starts < 3  # a new process costs about a second


TestEngineModel = TurnbackMachine.TestCase
TestEngineModel.settings = PROFILE

TestServerModel = ServerMachine.TestCase
TestServerModel.settings = PROFILE.__class__(
    PROFILE, max_examples=scaled(6, 60), stateful_step_count=scaled(12, 30)
)


@pytest.fixture(autouse=True, scope="module")
def _figures_reset():
    FIGURES.clear()
    yield


def test_model_figures(request) -> None:
    """Prints what the machines above ran (they run first, in file order)."""
    for driver, figures in FIGURES.items():
        title = f"model-based, {driver} ({PROFILE_NAME} profile)"
        record_figures(request, title, dict(sorted(figures.items())))
