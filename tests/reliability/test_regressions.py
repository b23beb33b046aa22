"""Failures the reliability tests found, each kept as an explicit, shrunk test.

A test marked xfail(strict=True) states the right behaviour of a product bug that is not
fixed yet: when the fix lands it passes, strict xfail turns that into a failure, and
whoever fixed it removes the mark (and the bug's entry in the machines' KNOWN_BUGS).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from helpers import make_repo, tree_state, write
from turnback.engine import Engine, RestoreOptions
from turnback.errors import TurnbackError
from turnback.wire import INTERNAL_ERROR, error_code


@pytest.fixture
def engine_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "hello\n", ".gitignore": "*.log\n"})


# Found by test_model.py (shrunk): a sealed turn replaced directory `d` by a file `d`.
# Undo saves only the paths it moves (Scanner.capture_paths), and treeops.tree_with, given
# {"d": file, "d/a.txt": None}, inserts `d` and then removes it again while applying the
# nested deletion; the saved state has no `d`, so redo cannot bring the file back.
def test_undo_redo_keeps_a_file_that_replaced_a_directory(engine_repo: Path) -> None:
    repo = engine_repo
    engine = Engine(str(repo))
    write(repo, "d/a.txt", "in a directory\n")
    engine.capture(session="s")
    shutil.rmtree(repo / "d")
    write(repo, "d", "the agent's file where the directory was\n")
    engine.capture(session="s", phase="after")
    before_undo = tree_state(repo)

    undone = engine.undo("s", RestoreOptions())
    assert (repo / "d" / "a.txt").read_text() == "in a directory\n"
    engine.redo("s", RestoreOptions())
    assert tree_state(repo) == before_undo, "redo must bring back exactly what undo replaced"
    assert {(f.path, f.action) for f in undone.files} == {
        ("d", "deleted"),
        ("d/a.txt", "created"),
    }


# Found by reading restore.py/workwriter.py while building the model, then confirmed: a
# sealed turn deleted d/a.txt; afterwards the user made a file (or a symlink) named `d`.
# Undo must put d/a.txt back, which needs `d` to be a directory: WorkWriter._prepare_parents
# unlinks the user's `d` although make_plan neither planned, saved nor conflict-checked it
# (`d` is not a path the turn changed). The user's file is gone for good: redo cannot
# bring it back either.
@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_undo_never_deletes_a_user_file_in_the_way_of_a_directory(
    engine_repo: Path, kind: str
) -> None:
    repo = engine_repo
    engine = Engine(str(repo))
    write(repo, "d/a.txt", "the turn deletes this\n")
    engine.capture(session="s")
    shutil.rmtree(repo / "d")
    engine.capture(session="s", phase="after")
    if kind == "file":
        write(repo, "d", "MY NOTES, written after the turn\n")
    else:
        os.symlink("README.md", repo / "d")
    mine = tree_state(repo)["d"]

    try:
        engine.undo("s", RestoreOptions())
    except TurnbackError as refused:  # refusing (a conflict, say) is fine: nothing changed
        assert error_code(refused) != INTERNAL_ERROR
    assert tree_state(repo).get("d") == mine, "undo destroyed a file the turn never touched"
    with contextlib.suppress(TurnbackError):
        engine.redo("s", RestoreOptions(force=True))
    assert tree_state(repo).get("d") == mine, "and redo did not bring it back"


# Found by test_model.py's long profile (shrunk): the redo side of the same bug. A turn
# created d/e/f.txt; after its undo the user made a file `d`; redo writes d/e/f.txt and
# WorkWriter._prepare_parents deletes the user's `d`, which is not among the paths redo
# checks for conflicts or saves (workwriter.py, the os.unlink in _prepare_parents).
def test_redo_never_deletes_a_user_file_in_the_way_of_a_directory(engine_repo: Path) -> None:
    repo = engine_repo
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "d/e/f.txt", "the agent's new file\n")
    engine.undo("s", RestoreOptions())
    assert not (repo / "d").exists()
    write(repo, "d", "MY NOTES, written after the undo\n")
    mine = tree_state(repo)["d"]
    try:
        engine.redo("s", RestoreOptions())
    except TurnbackError as refused:  # a conflict is the right answer
        assert error_code(refused) != INTERNAL_ERROR
    assert tree_state(repo).get("d") == mine, "redo destroyed a file the user made"


# Found by test_model.py's server variant (shrunk): the server captures through its file
# watcher (Scanner._capture_changed), which builds the new tree with treeops.tree_with from
# the changed paths; when a directory d/e was replaced by a file d/e, the changes are
# {"d/e": file, "d/e/f.txt": None} and tree_with drops the file: the "after" snapshot and
# every later one lack d/e, although it is on disk and not ignored.
def test_server_snapshot_holds_a_file_that_replaced_a_directory(engine_repo: Path) -> None:

    import pygit2
    from reliability_support import RawServer, tree_files

    repo = engine_repo
    write(repo, "d/e/f.txt", "in a directory\n")
    server = RawServer(repo)
    try:
        assert "result" in server.request("snapshot/capture", {"session": "s"}, timeout=60)
        shutil.rmtree(repo / "d" / "e")
        write(repo, "d/e", "a file where the directory was\n")
        sealed = server.request("snapshot/capture", {"session": "s", "phase": "after"})
        assert "result" in sealed, sealed
    finally:
        server.close()
    git = pygit2.Repository(str(repo))
    timeline = Engine(str(repo)).store.load("s")
    assert timeline is not None
    after = tree_files(git, git[pygit2.Oid(hex=timeline.turns[-1].after)].tree)
    assert after.get("d/e") == ("file", b"a file where the directory was\n", False), after


# Found by test_concurrency.py: a capture (or the partial save of an undo) while another
# process rewrites or deletes files fails with an internal error (CLI exit 3, JSON-RPC
# -32603). libgit2 raises GitError "error reading file for hashing" (a file shrank while
# Index.diff_to_workdir hashed it), NotFoundError "failed to resolve path" / "could not
# find ... to open" (a file vanished between the scan and its read), or OSError "failed to
# read file into stream" (in Scanner.capture_paths, whose read had no handler at
# all); Scanner.capture handled only OSError around the read and GitError "not found"
# around the scan. A file that changes under a capture must be taken as it is then (or
# left out if it vanished), or the request refused with a RequestFailed; never -32603.
@pytest.mark.parametrize("operation", ["capture", "undo-dry-run"])
def test_operations_while_files_are_rewritten_and_deleted(engine_repo: Path, operation) -> None:
    repo = engine_repo
    for i in range(40):
        write(repo, f"data/f{i}.bin", os.urandom(150_000))
    engine = Engine(str(repo))
    engine.capture(session="s")
    for i in range(40):  # a sealed turn that changed every file: undo saves just those
        write(repo, f"data/f{i}.bin", os.urandom(150_000))
    engine.capture(session="s", phase="after")
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            for i in range(40):
                path = repo / "data" / f"f{i}.bin"
                if (n + i) % 5 == 0:
                    path.unlink(missing_ok=True)
                else:
                    path.write_bytes(os.urandom(100_000 + (n % 7) * 1000))

    def run_once() -> None:
        if operation == "capture":
            engine.capture(session="other")
        else:
            engine.undo("s", RestoreOptions(force=True, dry_run=True))

    worker = threading.Thread(target=churn)
    worker.start()
    failures: list[str] = []
    runs = 0
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and runs < 200 and len(failures) < 3:
            runs += 1
            try:
                run_once()
            except TurnbackError as refused:
                if error_code(refused) == INTERNAL_ERROR:
                    failures.append(refused.message)
            except Exception as error:  # what the server reports as -32603
                failures.append(f"{type(error).__name__}: {error}")
    finally:
        stop.set()
        worker.join()
    assert not failures, f"{len(failures)} of {runs} {operation}s failed: {failures}"


# Found by an exploratory run: a 4 MB log a server appended a line to every 100 ms failed
# every capture ("Files kept changing") until the server stopped, as each read, compressed
# and flushed whole, outlasted the pause between two writes. Here an 8 MB log, whose
# compression alone outlasts the pause, so that only a check around the read itself passes.
# Every capture succeeds, and holds the log as it was between two writes: a prefix of it,
# ending with a whole line.
def test_captures_while_a_log_is_appended_to(engine_repo: Path) -> None:
    repo = engine_repo
    log = repo / "server.out"
    log.write_bytes(b"".join(b"%07d boot line of the server\n" % n for n in range(260_000)))
    stop = threading.Event()

    def append() -> None:
        with log.open("ab") as out:
            while not stop.is_set():
                out.write(b"GET / 200\n")
                out.flush()
                time.sleep(0.04)

    engine = Engine(str(repo))
    writer = threading.Thread(target=append)
    writer.start()
    captured: list[bytes] = []
    try:
        for n in range(6):
            engine.capture(session="s", label=f"turn {n}")
            turn = engine.store.load("s").turns[-1]  # type: ignore[union-attr]
            captured.append(engine.repo[engine.repo[turn.before].tree["server.out"].id].data)
    finally:
        stop.set()
        writer.join()
        engine.close()
    final = log.read_bytes()
    for data in captured:
        assert final.startswith(data) and data.endswith(b"\n")


# Found while modelling redo (not by the machine, which does not prune): an undo of turns
# 1..2 records batch [1, 2]; prune --keep 1 used to drop turn 1, and redo of turn 2 then
# expected turn 2's snapshot where the undo had left turn 1's: a spurious conflict. Prune
# now keeps the redo stack whole, with every turn its undo batches span.
def test_prune_keeps_the_turns_an_undo_batch_spans(engine_repo: Path) -> None:
    repo = engine_repo
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "a.txt", "turn 1\n")
    engine.capture(session="s")
    write(repo, "a.txt", "turn 2's edit\n")
    write(repo, "b.txt", "turn 2\n")
    before_undo = tree_state(repo)
    engine.undo("s", RestoreOptions(count=2))
    assert engine.prune("s", keep=1).removed_turns == []
    engine.redo("s", RestoreOptions(count=2))
    assert tree_state(repo) == before_undo


# Found by test_concurrency.py: an undo failed with -32603 "failed to lock file
# '.git/refs/turnback/main/sessions/alpha.lock' for writing" while the user's git commands
# ran alongside (git gc --auto after a commit runs pack-refs, which locks every loose ref,
# turnback's included, for a moment; git itself waits core.filesRefLockTimeout for such
# locks). libgit2 does not retry: TimelineStore.commit raises OSError after the undo has
# written the files, so the user gets an internal error, the work tree shows the undo while
# the timeline does not, until the next operation's recovery rolls the files back. A ref
# lock held briefly must be waited for (the operation succeeds), or the operation refused
# clearly with the work tree as it was; never -32603.
@pytest.mark.parametrize("operation", ["capture", "undo"])
def test_session_ref_locked_for_a_moment_by_git(engine_repo: Path, operation: str) -> None:
    repo = engine_repo
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "README.md", "the agent's edit\n")
    before = tree_state(repo)
    lock = repo / ".git" / "refs" / "turnback" / "main" / "sessions" / "s.lock"
    lock.write_text("")  # what git's ref transaction (pack-refs, update-ref) holds
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        if operation == "capture":
            engine.capture(session="s")
        else:
            engine.undo("s", RestoreOptions())
            assert (repo / "README.md").read_text() == "hello\n"
    except TurnbackError as refused:
        assert error_code(refused) != INTERNAL_ERROR, refused.message
        assert tree_state(repo) == before, "a refused operation must leave the files alone"
    except Exception as error:  # what the server reports as -32603
        pytest.fail(f"internal error: {type(error).__name__}: {error}")
    finally:
        release.join()
