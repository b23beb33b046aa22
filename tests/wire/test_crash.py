"""Crash safety: an operation killed at any point leaves a whole state, never a mix.

Each test runs a scripted scenario, kills the operation after its N-th file write or
ref update (TURNBACK_FAULT_AFTER) for every N until it completes, lets the next
process recover, and checks that the work tree is exactly the state before or after
the operation, that the timeline agrees, and that `git fsck` is clean.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import (
    SERVER_ENV,
    cli_json,
    git,
    git_run,
    listed_packs,
    make_repo,
    run_cli,
    tree_state,
    write,
)

FILES = {"a.txt": "a\n", "dir/b.txt": "b\n", "dir/c.txt": "c\n", "run.sh": "echo hi\n"}


def agent_turn(repo: Path) -> None:
    """An agent turn touching every kind of change: edit, delete, create, rename, chmod."""
    write(repo, "a.txt", "a, edited by the agent\n")
    (repo / "dir/b.txt").unlink()
    write(repo, "new/x.txt", "created\n")
    (repo / "dir/c.txt").rename(repo / "dir/d.txt")
    os.chmod(repo / "run.sh", 0o755)


def scenario(root: Path) -> tuple[Path, dict, dict]:
    """A repository with one sealed agent turn; the states before and after it."""
    repo = make_repo(root, FILES)
    before = tree_state(repo)
    cli_json(repo, "capture", "--label", "turn")
    agent_turn(repo)
    cli_json(repo, "capture", "--phase", "after")
    return repo, before, tree_state(repo)


def killed_at(repo: Path, step: int, *args: str) -> bool:
    """Runs a CLI operation that dies after its `step`-th durable step; False if it finished."""
    done = subprocess.run(
        [sys.executable, "-m", "turnback", *args],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": str(step)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr
    return done.returncode == -signal.SIGKILL


def recover(repo: Path) -> dict:
    """The next process: any locked operation recovers; list says what the timeline holds."""
    listing = cli_json(repo, "list")
    fsck = git_run(repo, "fsck", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert "journal" not in git(repo, "for-each-ref", "refs/turnback")
    staging = repo / ".git/turnback/staging"
    assert not staging.is_dir() or not any(staging.iterdir()), "temporary files left behind"
    return listing


def kill_everywhere(tmp_path: Path, prepare, operation: tuple[str, ...], check) -> int:
    """Kills `operation` at step 1, 2, ... until it completes; returns the steps tried."""
    step = 0
    while True:
        step += 1
        assert step < 100, "the operation never completed"
        repo, *states = prepare(tmp_path / f"run{step}")
        died = killed_at(repo, step, *operation)
        check(repo, recover(repo), *states)
        if not died:
            print(f"{' '.join(operation)}: killed at each of {step - 1} points, then completed")
            return step


# Ensures an undo killed at any step recovers to exactly the state before or after it.
def test_undo_killed_at_every_step(tmp_path: Path):
    def check(repo: Path, listing: dict, before: dict, after: dict) -> None:
        state = tree_state(repo)
        assert state in (before, after), "a mix of states"
        expected = "undone" if state == before else "active"
        assert listing["turns"][0]["state"] == expected

    steps = kill_everywhere(tmp_path, scenario, ("undo",), check)
    assert steps >= 6  # journal, five files, timeline ref: every point was exercised


# Ensures Ctrl-C, SIGTERM or a closed terminal (SIGHUP) in the middle of an undo's writes
# leaves the work tree whole at once, rolled back by the process itself with one line said:
# it left it half undone, with a traceback, until some later command recovered it.
@pytest.mark.parametrize("name", ["INT", "TERM", "HUP"])
def test_undo_interrupted_midway_rolls_back_at_once(tmp_path: Path, name: str):
    repo, _before, after = scenario(tmp_path / "repo")
    done = subprocess.run(
        [sys.executable, "-m", "turnback", "undo"],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": "4", "TURNBACK_FAULT_SIGNAL": name},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130, done.stdout + done.stderr  # README: interrupted
    assert "Undo failed: interrupted on" in done.stderr and "rolled back" in done.stderr
    assert "Traceback" not in done.stderr
    assert tree_state(repo) == after  # before any other command runs
    assert "journal" not in git(repo, "for-each-ref", "refs/turnback")
    assert recover(repo)["turns"][0]["state"] == "active"


def interrupted_at(repo: Path, step: int, *args: str) -> subprocess.CompletedProcess:
    """Runs a CLI operation that gets a Ctrl-C (SIGINT) after its `step`-th durable step."""
    return subprocess.run(
        [sys.executable, "-m", "turnback", *args],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": str(step), "TURNBACK_FAULT_SIGNAL": "INT"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# Ensures an interrupt at every step of an undo leaves it either rolled back and said to be
# interrupted, or done and said to be done: one after its commit point said "interrupted"
# alone (exit 130) with the undo made, and a user who ran it again undid a second turn.
def test_an_interrupt_after_the_commit_point_says_the_undo_was_done(tmp_path: Path):
    said_done = 0
    for step in range(1, 30):
        repo, before, after = scenario(tmp_path / f"repo{step}")
        done = interrupted_at(repo, step, "undo")
        listing = recover(repo)
        if done.returncode == 0:
            assert tree_state(repo) == before and listing["turns"][0]["state"] == "undone"
            if "interrupted" not in done.stderr:
                break  # the undo ended before this step: every step was tried
            said_done += "interrupted once the undo was done: it stands" in done.stderr
        else:
            assert "Traceback" not in done.stderr and "was done" not in done.stderr
            assert tree_state(repo) == after and listing["turns"][0]["state"] == "active"
    assert said_done >= 1


# Ensures the same of a capture: interrupted after its commit point, the turn is recorded
# and the command says so (exit 0); before it, nothing is recorded (exit 130).
def test_an_interrupt_after_the_commit_point_says_the_capture_was_done(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", FILES)
    said_done = 0
    for step in range(1, 30):
        turns = len(cli_json(repo, "list")["turns"])
        write(repo, "a.txt", f"step {step}\n")  # each capture writes as many steps
        done = interrupted_at(repo, step, "capture", "--label", f"step {step}")
        now = len(recover(repo)["turns"])
        assert "Traceback" not in done.stderr
        if done.returncode == 0:
            assert now == turns + 1
            if "interrupted" not in done.stderr:
                break
            said_done += "interrupted once the capture was done: it stands" in done.stderr
        else:
            assert (done.returncode, now) == (130, turns), done.stderr
    assert said_done >= 1


# Ensures `nohup turnback undo` (SIGHUP ignored by the parent) finishes when the terminal
# closes: the CLI's own handler replaced the ignore and rolled the undo back.
def test_undo_under_nohup_finishes_on_a_hangup(tmp_path: Path):
    repo, before, _after = scenario(tmp_path / "repo")
    done = subprocess.run(
        ["nohup", sys.executable, "-m", "turnback", "undo"],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": "4", "TURNBACK_FAULT_SIGNAL": "HUP"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree_state(repo) == before


# Ensures a command that first recovers a killed undo, then works, answers that it worked
# when its stderr is a pipe nobody reads: printing the recovery's note there failed it as
# "storageFailed: Broken pipe", and a harness retrying it would undo another turn.
def test_recovery_note_to_a_closed_stderr_does_not_fail_the_command(tmp_path: Path):
    repo, before, _after = scenario(tmp_path / "repo")
    assert killed_at(repo, 3, "undo")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "undo", "--json"],
            cwd=repo,
            env=SERVER_ENV,
            stdout=subprocess.PIPE,
            stderr=write_end,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["turnsUndone"] == 1
    assert tree_state(repo) == before


# Ensures temporary files written beside their targets (staging on another file system)
# never survive a crash: the next process sweeps them.
def test_undo_killed_with_temporary_files_beside_the_targets(tmp_path: Path):
    def unusable_staging(root: Path) -> tuple[Path, dict, dict]:
        repo, before, after = scenario(root)
        staging = repo / ".git/turnback/staging"
        if staging.is_dir():
            staging.rmdir()
        staging.write_text("not a directory\n")
        # The user's own file that looks like one of ours must survive every sweep.
        lookalike = "dir/.turnback-0123456789abcdef-deadbeef.tmp"
        write(repo, lookalike, "mine\n")
        mine = {lookalike: tree_state(repo)[lookalike]}
        return repo, {**before, **mine}, {**after, **mine}

    def check(repo: Path, listing: dict, before: dict, after: dict) -> None:
        assert tree_state(repo) in (before, after), "a mix of states, or a temporary file"

    assert kill_everywhere(tmp_path, unusable_staging, ("undo",), check) >= 10


# Ensures a redo killed at any step recovers to exactly the state before or after it.
def test_redo_killed_at_every_step(tmp_path: Path):
    def undone(root: Path) -> tuple[Path, dict, dict]:
        repo, before, after = scenario(root)
        cli_json(repo, "undo")
        return repo, before, after

    def check(repo: Path, listing: dict, before: dict, after: dict) -> None:
        state = tree_state(repo)
        assert state in (before, after), "a mix of states"
        expected = "active" if state == after else "undone"
        assert listing["turns"][0]["state"] == expected

    assert kill_everywhere(tmp_path, undone, ("redo",), check) >= 6


# Ensures a capture killed at any step leaves the files alone and a whole timeline.
def test_capture_killed_at_every_step(tmp_path: Path):
    def sealed(root: Path) -> tuple[Path, dict]:
        repo, _before, after = scenario(root)
        write(repo, "a.txt", "the user's next edit\n")
        return repo, tree_state(repo)

    def check(repo: Path, listing: dict, state: dict) -> None:
        assert tree_state(repo) == state
        assert [t["turn"] for t in listing["turns"]] in ([1], [2, 1])

    assert kill_everywhere(tmp_path, sealed, ("capture", "--label", "next"), check) >= 2


# Ensures a sealing capture killed at any durable step loses no object: the turn still
# undoes, git fsck is clean, and no pack is left listed for unpacking (ownpacks.py).
def test_sealing_capture_killed_at_every_step(tmp_path: Path):
    template = make_repo(tmp_path / "template", FILES)
    cli_json(template, "capture", "--label", "turn")
    write(template, "a.txt", "the agent's edit\n")
    write(template, "deep/er/x.txt", "new\n")

    def sealing(root: Path) -> tuple[Path, dict]:
        shutil.copytree(template, root, symlinks=True)
        return root, tree_state(root)

    def check(repo: Path, listing: dict, state: dict) -> None:
        assert tree_state(repo) == state
        cli_json(repo, "undo")
        assert (repo / "a.txt").read_text() == FILES["a.txt"]
        assert git(repo, "fsck", "--strict", "--no-dangling") == ""

    steps = kill_everywhere(tmp_path, sealing, ("capture", "--phase", "after"), check)
    assert steps >= 2  # the anchor and the session's ref at least
    assert listed_packs(tmp_path / f"run{steps}") == []


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _big_turn(root: Path, count: int) -> tuple[Path, dict, dict]:
    """A repository where one sealed turn rewrote `count` files."""
    repo = make_repo(root, {f"d{i % 20}/f{i}.txt": f"{i}\n" for i in range(count)})
    before = tree_state(repo)
    cli_json(repo, "capture", "--label", "big")
    for i in range(count):
        write(repo, f"d{i % 20}/f{i}.txt", f"{i} edited by the agent\n")
    cli_json(repo, "capture", "--phase", "after")
    return repo, before, tree_state(repo)


def _start_undo(repo: Path) -> subprocess.Popen:
    """The real server, asked over stdio to undo the turn."""
    server = subprocess.Popen(
        [sys.executable, "-m", "turnback", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=SERVER_ENV,
    )
    assert server.stdin is not None
    init = {"processId": None, "rootUri": repo.as_uri(), "capabilities": {}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "snapshot/undo", "params": {}},
    ):
        server.stdin.write(_frame(message))
    server.stdin.flush()
    return server


# Ensures kill -9 of the real server during an undo of thousands of files is recovered whole.
def test_server_killed_during_big_undo(tmp_path: Path):
    count = 2000
    mid_restore = 0
    # Moments: before the restore starts, and 0, 0.1 and 0.3 s into its writes.
    for n, after_journal in enumerate((None, 0.0, 0.1, 0.3)):
        repo, before, after = _big_turn(tmp_path / f"big{n}", count)
        journal = repo / ".git/refs/turnback/main/journal"
        server = _start_undo(repo)
        if after_journal is None:
            time.sleep(0.2)
        else:
            deadline = time.monotonic() + 30
            while not journal.exists() and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(after_journal)
        server.kill()
        server.wait(timeout=10)
        mid_restore += journal.exists()

        listing = recover(repo)
        state = tree_state(repo)
        assert state in (before, after), f"a mix of states after kill {n}"
        assert listing["turns"][0]["state"] == ("undone" if state == before else "active")
    print(f"server killed 4 times during a {count}-file undo, {mid_restore} mid-restore")
    assert mid_restore >= 2, "the kills must land while files are being written"


# Ensures SIGTERM, SIGHUP or Ctrl-C to the real server in the middle of an undo's writes
# (an editor or a terminal going away) lets the undo finish before the server ends: it
# died mid-restore, the tree half undone until some later command recovered it.
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_server_stopped_during_big_undo_finishes_it(tmp_path: Path, name: str):
    repo, before, _after = _big_turn(tmp_path / "big", 2000)
    journal = repo / ".git/refs/turnback/main/journal"
    server = _start_undo(repo)
    deadline = time.monotonic() + 30
    while not journal.exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert journal.exists(), "the signal must land while files are being written"
    server.send_signal(getattr(signal, name))
    assert server.wait(timeout=60) == 0
    assert not journal.exists()
    assert tree_state(repo) == before  # whole, before any other command ran


# Ensures a second Ctrl-C ends the server at once while a request waits (here behind the
# repository lock another process holds): the server sat out the request's whole wait.
def test_a_second_ctrl_c_ends_a_waiting_server(tmp_path: Path):
    import fcntl

    repo, _before, _after = scenario(tmp_path / "repo")
    with open(repo / ".git" / "turnback" / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = _start_undo(repo)  # its undo waits for the lock
        time.sleep(1.0)
        server.send_signal(signal.SIGINT)
        time.sleep(0.3)
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=5) != 0


# Ensures the CLI reports a recovery it made (the user is told, not left guessing).
def test_recovery_is_reported(tmp_path: Path):
    repo, _before, after = scenario(tmp_path / "repo")
    assert killed_at(repo, 3, "undo")  # the journal, then two of the five files
    done = run_cli(repo, "list")
    assert done.returncode == 0
    assert "rolled back an interrupted undo" in done.stderr
    assert tree_state(repo) == after


# Ensures a temporary file that a power loss put back in the staging directory (its
# rename never reached the disk) is removed by the next operation, journal or not.
def test_stray_staged_files_are_swept(tmp_path: Path):
    repo, _before, after = scenario(tmp_path / "repo")
    staging = repo / ".git/turnback/staging"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / ".turnback-0123456789abcdef-deadbeef.tmp").write_text("stale\n")
    recover(repo)  # asserts the staging directory is empty
    assert tree_state(repo) == after


def _killed_midway(root: Path) -> tuple[Path, dict]:
    """An undo killed after its journal and two deletes (new/x.txt, dir/d.txt); the
    state before it (the agent's turn), which recovery must bring back."""
    repo, _before, after = scenario(root)
    assert killed_at(repo, 3, "undo")
    assert not (repo / "new/x.txt").exists() and not (repo / "dir/d.txt").exists()
    return repo, after


def _rescued(repo: Path) -> list[dict]:
    timeline = git(repo, "show", "refs/turnback/main/sessions/default:session.json")
    return json.loads(timeline)["rescued"]


# Ensures recovery leaves a file the user changed after the crash (matching neither the
# state before nor after the interrupted undo) as it is, says so, and rolls back the rest.
def test_recovery_keeps_files_the_user_changed_after_the_crash(tmp_path: Path):
    repo, after = _killed_midway(tmp_path / "repo")
    write(repo, "a.txt", "the user's edit of a file not yet rolled back\n")
    write(repo, "new/x.txt", "the user's own file where undo had deleted one\n")
    mine = {p: tree_state(repo)[p] for p in ("a.txt", "new/x.txt")}

    done = run_cli(repo, "list")
    assert done.returncode == 0, done.stderr
    assert "rolled back an interrupted undo" in done.stderr
    assert "left as they are (yours): a.txt, new/x.txt" in done.stderr
    assert tree_state(repo) == {**after, **mine}  # dir/d.txt is back, the edits are kept
    listing = recover(repo)
    assert listing["turns"][0]["state"] == "active"
    # What the interrupted undo replaced stays reachable, as a rescued version the user can
    # list and put back: the agent's a.txt, say.
    assert git(repo, "show", f"{_rescued(repo)[-1]['commit']}:a.txt") == "a, edited by the agent\n"
    assert [(r["reason"], r["files"]) for r in listing["rescued"]] == [
        ("recoveryKept", ["a.txt", "new/x.txt"])
    ]


# Ensures a user who keeps typing into the turn's files while recovery runs is never
# overwritten: every read-back between keystrokes finds the user's own last write.
def test_recovery_never_overwrites_a_user_who_keeps_typing(tmp_path: Path):
    repo, after = _killed_midway(tmp_path / "repo")
    typed = ("a.txt", "new/x.txt")
    foreign: list[str] = []
    stop = threading.Event()

    def typist() -> None:
        n = 0
        while not stop.is_set():
            for rel in typed:
                n += 1
                content = f"keystroke {n}\n"
                write(repo, rel, content)
                time.sleep(0.001)
                seen = (repo / rel).read_text()
                if seen != content:
                    foreign.append(f"{rel}: {seen!r}")

    thread = threading.Thread(target=typist)
    thread.start()
    try:
        time.sleep(0.05)  # the user is typing before recovery starts
        done = run_cli(repo, "list")
    finally:
        stop.set()
        thread.join()
    assert done.returncode == 0, done.stderr
    assert not foreign, f"recovery wrote over the user: {foreign[:3]}"
    state = tree_state(repo)
    assert {p: v for p, v in state.items() if p not in typed} == {
        p: v for p, v in after.items() if p not in typed
    }
    assert all(state[p][1].startswith(b"keystroke ") for p in typed)


# Ensures recovery never opens, replaces or deletes a FIFO the user made at a journal
# path after the crash, and finishes in bounded time, reporting the path.
def test_recovery_leaves_a_fifo_at_a_journal_path(tmp_path: Path):
    repo, after = _killed_midway(tmp_path / "repo")
    (repo / "a.txt").unlink()
    os.mkfifo(repo / "a.txt")  # where the rollback has nothing to do: a.txt is as before
    (repo / "new").mkdir(exist_ok=True)
    os.mkfifo(repo / "new/x.txt")  # where the rollback must put a file back

    done = run_cli(repo, "list")  # run_cli times out (fails) if anything blocks
    assert done.returncode == 0, done.stderr
    assert "left as they are (yours): a.txt, new/x.txt" in done.stderr
    for rel in ("a.txt", "new/x.txt"):
        assert stat.S_ISFIFO(os.lstat(repo / rel).st_mode), f"{rel} is no longer the FIFO"
    assert (repo / "dir/d.txt").read_text() == "c\n"


# Ensures recovery leaves alone what the user's own git command wrote after the crash when
# it wrote exactly the bytes the undo was writing (`git checkout -- a.txt` after an undo
# killed before it reached a.txt): recovery judged by content alone, took them for the
# undo's and rolled them back to the agent's version. The undo's ledger says what it wrote.
def test_recovery_leaves_what_the_users_git_wrote_after_the_crash(tmp_path: Path):
    repo, after = _killed_midway(tmp_path / "repo")
    git(repo, "checkout", "--", "a.txt", "dir/b.txt")  # as before the turn: the undo's target
    mine = {p: tree_state(repo)[p] for p in ("a.txt", "dir/b.txt")}
    assert mine["a.txt"] != after["a.txt"] and "dir/b.txt" not in after

    done = run_cli(repo, "list")
    assert done.returncode == 0, done.stderr
    assert "left as they are (yours): a.txt, dir/b.txt" in done.stderr
    state = tree_state(repo)
    assert {p: state[p] for p in mine} == mine
    assert state["new/x.txt"] == after["new/x.txt"]  # what the undo did is rolled back
    recover(repo)


# Ensures recovery leaves what the user did after an undo killed right after its journal,
# before it wrote any file: the ledger was made only with the first write, so recovery
# judged by content alone and undid the user's `git checkout` and `rm` (the agent's a.txt
# and new/x.txt came back).
def test_recovery_leaves_what_the_user_did_after_an_undo_killed_before_any_write(
    tmp_path: Path,
):
    repo, _before, after = scenario(tmp_path / "repo")
    assert killed_at(repo, 1, "undo")
    assert tree_state(repo) == after  # nothing written yet
    git(repo, "checkout", "--", "a.txt")
    (repo / "new/x.txt").unlink()
    mine = tree_state(repo)

    done = run_cli(repo, "list")
    assert done.returncode == 0, done.stderr
    assert tree_state(repo) == mine
    recover(repo)
