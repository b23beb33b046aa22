"""The `turnback` command line as a subprocess, alone and next to the server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from helpers import (
    SERVER_ENV,
    cli_json,
    git_run,
    read,
    request,
    run_cli,
    write,
)
from turnback.engine import Engine

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# ---- 11 every command, JSON and human ------------------------------------------------------


# Ensures capture/diff/undo/redo/list/prune work with --json and print the protocol's results.
def test_cli_json_commands(repo: Path):
    turn = cli_json(repo, "capture", "--label", "first")
    assert (turn["turn"], turn["label"], turn["state"]) == (1, "first", "active")
    write(repo, "src/app.py", "print('agent')\n")
    diff = cli_json(repo, "diff")
    [entry] = diff["files"]
    assert entry["path"] == "src/app.py" and entry["status"] == "modified"
    assert entry["diff"].endswith("-print('v1')\n+print('agent')\n")
    assert cli_json(repo, "diff", "1")["turn"]["id"] == turn["id"]
    assert cli_json(repo, "diff", turn["id"])["turn"]["turn"] == 1
    undone = cli_json(repo, "undo")
    assert undone["turnsUndone"] == 1
    assert undone["files"] == [{"path": "src/app.py", "action": "modified"}]
    assert read(repo, "src/app.py") == "print('v1')\n"
    listing = cli_json(repo, "list")
    assert [t["state"] for t in listing["turns"]] == ["undone"]
    assert (listing["canUndo"], listing["canRedo"]) == (False, True)
    redone = cli_json(repo, "redo")
    assert redone["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('agent')\n"
    cli_json(repo, "capture", "--label", "second")
    assert [t["turn"] for t in cli_json(repo, "list", "--limit", "1")["turns"]] == [2]
    pruned = cli_json(repo, "prune", "--keep", "1")
    assert pruned["removedTurns"] == [{"session": "default", "turn": 1, "id": turn["id"]}]
    assert [t["turn"] for t in cli_json(repo, "list")["turns"]] == [2]


# Ensures `diff` names both sides of a rename and a mode change, as git's `rename from/to`
# and `old mode/new mode` do: a rename printed only its new name, a chmod a bare "modified".
def test_cli_diff_names_renames_and_mode_changes(repo: Path):
    cli_json(repo, "capture", "--label", "t1")
    (repo / "README.md").rename(repo / "READ.md")
    os.chmod(repo / "src/app.py", 0o755)
    printed = run_cli(repo, "diff").stdout.splitlines()
    assert "renamed README.md -> READ.md" in printed
    assert "modified src/app.py (mode 100644 -> 100755)" in printed


# Ensures the same commands print readable human output (no JSON) and exit 0.
def test_cli_human_output(repo: Path):
    done = run_cli(repo, "capture", "--label", "first")
    assert done.returncode == EXIT_OK
    assert done.stdout.startswith("Turn 1 (") and "session 'default'" in done.stdout
    write(repo, "src/app.py", "print('agent')\n")
    diff = run_cli(repo, "diff").stdout
    assert diff == (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('v1')\n+print('agent')\n"
    )
    listing = run_cli(repo, "list").stdout
    assert listing.startswith("Session 'default'  undo: yes  redo: no\n")
    assert "first" in listing
    undo = run_cli(repo, "undo").stdout
    assert undo.startswith("Undid 1 turn (1 file changed)") and "modified src/app.py" in undo
    assert "turn 1 \"first\" of session 'default'" in undo  # which, as sessions come and go
    assert "(undone)" in run_cli(repo, "list").stdout
    redo = run_cli(repo, "redo").stdout
    assert redo.startswith("Redid 1 turn") and "src/app.py" in redo
    prune = run_cli(repo, "prune", "--keep", "0")
    assert prune.returncode == EXIT_OK
    assert prune.stdout == "Removed 1 turns and 1 sessions\n"
    for out in (diff, listing, undo, redo, prune.stdout):
        assert not out.lstrip().startswith("{")


# ---- 12 exit codes -----------------------------------------------------------------------------


# Ensures a bad --count is a usage error (exit 2) whose message names "count".
@pytest.mark.parametrize("command", ["undo", "redo"])
def test_cli_bad_count_exits_2(repo: Path, command: str):
    cli_json(repo, "capture")
    done = run_cli(repo, command, "--count", "0")
    assert done.returncode == EXIT_USAGE
    assert "count" in done.stderr
    as_json = run_cli(repo, command, "--count", "0", "--json")
    assert as_json.returncode == EXIT_USAGE
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == -32602 and "count" in error["message"]


# Ensures "Nothing to undo" is a normal outcome: exit 0 with that message; a dry run says
# it was one there too (it said dryRun false, as if the undo had run).
def test_cli_nothing_to_undo_exits_0(repo: Path):
    done = run_cli(repo, "undo")
    assert done.returncode == EXIT_OK
    assert "Nothing to undo" in done.stdout
    assert cli_json(repo, "undo")["turnsUndone"] == 0
    assert cli_json(repo, "undo", "--dry-run")["dryRun"] is True
    assert cli_json(repo, "redo", "--dry-run")["dryRun"] is True
    assert cli_json(repo, "redo")["dryRun"] is False


# Ensures an undo that would overwrite later user edits exits 1 naming the file, changing nothing.
def test_cli_conflict_exits_1_naming_file(repo: Path):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    write(repo, "src/app.py", "print('user edit after the turn')\n")
    done = run_cli(repo, "undo")
    assert done.returncode == EXIT_FAILED
    assert "src/app.py" in done.stderr
    assert read(repo, "src/app.py") == "print('user edit after the turn')\n"
    assert [t["state"] for t in cli_json(repo, "list")["turns"]] == ["active"]
    forced = run_cli(repo, "undo", "--force")
    assert forced.returncode == EXIT_OK
    assert read(repo, "src/app.py") == "print('v1')\n"


# Ensures an undo or diff of a turn whose snapshot lost a tree (deleted from .git/objects
# by hand) exits 1 naming the missing object, and leaves every file as it was.
def test_cli_missing_snapshot_object_exits_1(repo: Path):
    write(repo, "src/wip.py", "the user's work in progress\n")  # a tree only the snapshot has
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    engine = Engine(str(repo))
    try:
        before = engine.store.load("default").turns[-1].before  # type: ignore[union-attr]
        lost = str(engine.repo[pygit2.Oid(hex=before)].tree["src"].id)
    finally:
        engine.close()
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    for command in ("undo", "diff"):
        done = run_cli(repo, command, "--json")
        assert done.returncode == EXIT_FAILED, command
        error = json.loads(done.stdout)["error"]
        assert error["data"] == {"reason": "failed", "object": lost}, command
        assert lost in error["message"] and "Nothing was changed" in error["message"]
        assert done.stderr.count("\n") == 1 and lost in done.stderr  # and one line for people
    assert read(repo, "src/app.py") == "print('agent')\n"
    assert read(repo, "src/wip.py") == "the user's work in progress\n"
    assert [t["state"] for t in cli_json(repo, "list")["turns"]] == ["active"]


# Ensures output into a pipe its reader has closed (`turnback undo | head -1`) ends quietly
# with the command done, not with a BrokenPipeError traceback; --dry-run says "Would undo".
def test_cli_output_into_a_closed_pipe(repo: Path):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    assert run_cli(repo, "undo", "--dry-run").stdout.startswith("Would undo 1 turn")
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "undo"],
            cwd=repo,
            env=SERVER_ENV,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(writer)
    assert done.returncode == EXIT_OK and "Traceback" not in done.stderr, done.stderr
    assert read(repo, "src/app.py") == "print('v1')\n"


# ---- 13 CLI and server together ----------------------------------------------------------------


# Ensures the CLI and the server share one timeline: a server turn undone by the CLI shows undone.
async def test_server_capture_cli_undo_server_list(client, repo: Path):
    turn = await request(client, "snapshot/capture", {"label": "from the server"})
    write(repo, "src/app.py", "print('agent')\n")
    done = await asyncio.to_thread(run_cli, repo, "undo", "--json")
    assert done.returncode == EXIT_OK, done.stderr
    assert json.loads(done.stdout)["turns"][0]["id"] == turn["id"]
    assert read(repo, "src/app.py") == "print('v1')\n"
    listing = await request(client, "snapshot/list")
    assert [(t["id"], t["state"]) for t in listing["turns"]] == [(turn["id"], "undone")]
    assert listing["canRedo"] is True
    redone = await request(client, "snapshot/redo")
    assert redone["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('agent')\n"


# Ensures concurrent CLI captures get distinct turn numbers and leave the repository sound.
def test_concurrent_cli_captures(repo: Path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "turnback", "capture", "--label", f"p{i}", "--json"],
            cwd=repo,
            env=SERVER_ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == EXIT_OK, err
        results.append(json.loads(out))
    assert sorted(r["turn"] for r in results) == [1, 2, 3, 4]
    assert len({r["id"] for r in results}) == 4
    listing = cli_json(repo, "list")
    assert sorted(t["turn"] for t in listing["turns"]) == [1, 2, 3, 4]
    assert {t["label"] for t in listing["turns"]} == {"p0", "p1", "p2", "p3"}
    fsck = git_run(repo, "fsck", "--full", "--strict")
    assert fsck.returncode == 0, fsck.stderr
    for word in ("error", "missing", "broken", "corrupt"):
        assert word not in (fsck.stdout + fsck.stderr).lower()


# ---- 14 metadata -------------------------------------------------------------------------------


# Ensures --metadata that is not a JSON object is a usage error (exit 2) naming metadata.
# Nested past the JSON parser's recursion limit it is the same usage error as 65 levels,
# not an internal error (exit 3) with nothing on stdout under --json.
@pytest.mark.parametrize(
    "metadata", ["{bad", "[1, 2]", '"text"', '{"a": ' + "[" * 5000 + "]" * 5000 + "}"]
)
def test_cli_bad_metadata_exits_2(repo: Path, metadata: str):
    done = run_cli(repo, "capture", "--metadata", metadata)
    assert done.returncode == EXIT_USAGE
    assert "metadata" in done.stderr and "internal error" not in done.stderr
    error = json.loads(run_cli(repo, "capture", "--json", "--metadata", metadata).stdout)
    assert error["error"]["data"]["field"] == "metadata"
    assert cli_json(repo, "list")["turns"] == []


# Ensures valid --metadata is stored with the turn exactly as given.
def test_cli_metadata_is_stored(repo: Path):
    meta = {"agent": "claude", "odd-key": [1, {"class": None}]}
    turn = cli_json(repo, "capture", "--metadata", json.dumps(meta))
    assert turn["metadata"] == meta
    assert cli_json(repo, "list")["turns"][0]["metadata"] == meta


# Ensures a command whose output cannot be written (stdout closed, or a full device) is
# still done and says so with exit 0, not a traceback and exit 1 ("refused").
@pytest.mark.parametrize("output", ["closed", "/dev/full"])
def test_cli_output_that_cannot_be_written(repo: Path, output: str):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    sink = None if output == "closed" else open(output, "w")  # noqa: SIM115
    try:
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "undo", "--json"],
            cwd=repo,
            env=SERVER_ENV,
            stdout=sink if sink is not None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
            **({"pass_fds": ()} if sink else {"preexec_fn": lambda: os.close(1)}),
        )
    finally:
        if sink is not None:
            sink.close()
    assert done.returncode == EXIT_OK and "Traceback" not in done.stderr, done.stderr
    assert read(repo, "src/app.py") == "print('v1')\n"


# Ensures a file the user makes while an open turn (captured by hand, never sealed) is
# undone stays through a redo and a second undo: the open turn ended "now", so the second
# undo took the file for the turn's and deleted it (gone once a capture dropped the redo).
def test_a_file_made_while_an_open_turn_is_undone_survives_redo_and_undo(repo: Path):
    cli_json(repo, "capture", "--label", "by hand")
    write(repo, "agent.txt", "the agent's\n")
    cli_json(repo, "undo")
    write(repo, "notes.txt", "the user's, made while the turn was undone\n")
    cli_json(repo, "redo")
    assert read(repo, "agent.txt") == "the agent's\n"
    undone = cli_json(repo, "undo")
    assert [f["path"] for f in undone["files"]] == ["agent.txt"]
    assert read(repo, "notes.txt") == "the user's, made while the turn was undone\n"
    cli_json(repo, "capture", "--label", "next")  # drops the redo stack
    assert read(repo, "notes.txt") == "the user's, made while the turn was undone\n"


# Ensures what an open turn left out (a file too large to keep) is still said to be kept by
# an undo after its redo: sealed by the redo, the turn had no record of what it left out.
def test_what_an_open_turn_left_out_is_kept_after_redo_and_undo(repo: Path):
    cli_json(repo, "capture", "--label", "by hand")
    write(repo, "agent.txt", "the agent's\n")
    (repo / "big.bin").write_bytes(b"x" * (11 << 20))  # past untrackedFileSizeLimit
    first = cli_json(repo, "undo")
    assert [(k["path"], k["reason"]) for k in first["kept"]] == [("big.bin", "tooLarge")]
    cli_json(repo, "redo")
    again = cli_json(repo, "undo")
    assert [(k["path"], k["reason"]) for k in again["kept"]] == [("big.bin", "tooLarge")]
    assert (repo / "big.bin").stat().st_size == 11 << 20


# Ensures a late "after" capture, for a turn the user undid meanwhile, seals no older turn
# in its place (it took the user's new file into that turn, for its undo to delete), and
# that `capture --turn` seals only the turn it names.
def test_cli_late_after_capture_seals_no_older_turn(repo: Path):
    cli_json(repo, "capture", "--label", "A")
    write(repo, "a.txt", "agent A\n")
    cli_json(repo, "capture", "--phase", "after")
    second = cli_json(repo, "capture", "--label", "B")
    write(repo, "b.txt", "agent B\n")
    cli_json(repo, "undo")
    write(repo, "mine.txt", "the user's\n")

    late = run_cli(repo, "capture", "--phase", "after", "--json")
    assert late.returncode == EXIT_FAILED
    error = json.loads(late.stdout)["error"]
    assert error["data"]["reason"] == "noOpenTurn" and "Turn 2" in error["message"]
    # Naming turn A (sealed long before, the newest active now) seals it no more: sealed
    # again, it took mine.txt in, and its undo deleted it with no conflict.
    named_older = run_cli(repo, "capture", "--phase", "after", "--turn", "1", "--json")
    error = json.loads(named_older.stdout)["error"]
    assert error["data"]["reason"] == "noOpenTurn" and "Turn 2" in error["message"]
    cli_json(repo, "undo")  # turn A: mine.txt was never part of it
    assert read(repo, "mine.txt") == "the user's\n"
    assert not (repo / "a.txt").exists()

    cli_json(repo, "capture", "--label", "C")
    named = run_cli(repo, "capture", "--phase", "after", "--turn", second["id"], "--json")
    error = json.loads(named.stdout)["error"]
    assert error["data"]["reason"] == "noOpenTurn"
    assert "undone and dropped" in error["message"]  # not "capture before first"
    missing = run_cli(repo, "capture", "--phase", "after", "--turn", "99", "--json")
    error = json.loads(missing.stdout)["error"]  # not "is not the newest" of a turn never made
    assert error["data"]["reason"] == "noOpenTurn" and "No turn 99" in error["message"]
    assert cli_json(repo, "capture", "--phase", "after", "--turn", "3")["turn"] == 3


# Ensures a damaged stat cache (its file emptied, or its anchor ref left empty, as a crash
# on a disk that lost writes leaves them) is started over: captures were refused for good
# with "Files kept changing", and hooks silently recorded nothing.
@pytest.mark.parametrize("damage", ["index file", "anchor ref"])
def test_cli_damaged_stat_cache_starts_over(repo: Path, damage: str):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    damaged = (
        repo / ".git" / ("turnback/index" if damage == "index file" else "refs/turnback/main/index")
    )
    damaged.write_bytes(b"")
    assert cli_json(repo, "capture", "--label", "t2")["turn"] == 2
    write(repo, "src/app.py", "print('agent again')\n")
    cli_json(repo, "capture", "--phase", "after")
    assert cli_json(repo, "undo", "-n", "2")["turnsUndone"] == 2
    assert read(repo, "src/app.py") == "print('v1')\n"
    assert git_run(repo, "fsck").returncode == 0


# Ensures a session whose timeline does not read (its ref file emptied, or naming a blob) is
# refused with one line naming it (exit 1, not an internal error or an empty list), leaves
# other sessions alone, and is set aside, never deleted, by the next capture into it.
@pytest.mark.parametrize("damage", ["empty ref file", "ref names a blob"])
def test_cli_damaged_timeline_is_named_and_set_aside(repo: Path, damage: str):
    for session in ("default", "other"):
        cli_json(repo, "capture", "--session", session, "--label", session)
    ref = repo / ".git/refs/turnback/main/sessions/default"
    if damage == "empty ref file":
        ref.write_bytes(b"")
    else:
        write(repo, "junk.txt", "junk\n")
        blob = git_run(repo, "hash-object", "-w", "junk.txt").stdout.strip()
        git_run(repo, "update-ref", "refs/turnback/main/sessions/default", blob)
    for command in ("list", "undo", "diff"):
        done = run_cli(repo, command, "--session", "default")
        assert done.returncode == EXIT_FAILED, (command, done.stdout, done.stderr)
        [line] = done.stderr.splitlines()
        assert "session 'default' cannot be read" in line and "internal error" not in line
    assert [t["label"] for t in cli_json(repo, "list", "--session", "other")["turns"]] == ["other"]

    again = run_cli(repo, "capture", "--session", "default", "--label", "again")
    assert again.returncode == EXIT_OK, again.stderr
    assert "set aside" in again.stderr
    assert [t["label"] for t in cli_json(repo, "list", "--session", "default")["turns"]] == [
        "again"
    ]
    if damage == "ref names a blob":
        kept = git_run(repo, "for-each-ref", "--format=%(objectname)", "refs/turnback/retired")
        assert kept.stdout.strip() == blob
    else:
        assert list((repo / ".git/turnback/damaged-refs").iterdir())


# Ensures a journal left by an undo killed midway that no longer reads (its ref file
# emptied, as a disk that lost writes leaves it) is set aside with a message, instead of
# every later command answering an internal error, for good.
def test_cli_damaged_journal_is_set_aside(repo: Path):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "README.md", "agent readme\n")
    cli_json(repo, "capture", "--phase", "after")
    killed = run_cli(repo, "undo", env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": "2"})
    assert killed.returncode != EXIT_OK
    journal = repo / ".git/refs/turnback/main/journal"
    journal.write_bytes(b"")
    listed = run_cli(repo, "list")
    assert listed.returncode == EXIT_OK and "internal error" not in listed.stderr
    assert "journal of an interrupted restore could not be read" in listed.stderr
    assert not journal.exists()
    assert list((repo / ".git/turnback/damaged-refs").iterdir())
    assert cli_json(repo, "capture", "--label", "t2")["turn"] == 2


# Ensures TURNBACK_SETTINGS reaches `capture` (and the hooks, which capture the same way)
# as README says, where only list, undo and redo read it: a harness could set no limit.
def test_cli_capture_reads_turnback_settings(repo: Path):
    env = {
        **SERVER_ENV,
        "TURNBACK_SETTINGS": '{"turnsPerSession": 2, "untrackedFileSizeLimit": 10}',
    }
    write(repo, "big.txt", "more than ten bytes\n")
    for n in range(3):
        done = run_cli(repo, "capture", "--label", f"t{n}", "--json", env=env)
        assert done.returncode == EXIT_OK, done.stderr
    assert {"path": "big.txt", "reason": "tooLarge"} in json.loads(done.stdout)["skipped"]
    assert [t["label"] for t in cli_json(repo, "list")["turns"]] == ["t2", "t1"]


# Ensures names and labels reach the terminal quoted, as git shows them: an escape sequence
# in a name the agent made (or a label with a newline) was printed raw, able to erase or
# forge a line of the undo's report.
def test_cli_quotes_control_characters(repo: Path):
    cli_json(repo, "capture", "--label", "two\nlines")
    write(repo, "hide\x1b[2K\rok.txt", "agent\n")
    cli_json(repo, "capture", "--phase", "after")
    listed = run_cli(repo, "list").stdout
    assert '"two\\nlines"' in listed
    undone = run_cli(repo, "undo")
    assert undone.returncode == EXIT_OK, undone.stderr
    assert "\x1b" not in undone.stdout and '"hide\\033[2K\\rok.txt"' in undone.stdout


# Ensures output the console's encoding cannot hold (a cp1252 or ASCII console) never turns
# a finished command into a failure: an undo of a turn that named `tea☕.txt` undid it, then
# failed with a traceback and exit 1 ("refused"), and `list --json` crashed. Text gets `?`,
# JSON its escapes (still the same JSON).
def test_cli_output_in_an_encoding_without_the_characters(repo: Path):
    cli_json(repo, "capture", "--label", "Fix the ☕ bug")
    write(repo, "tea☕.txt", "agent\n")
    cli_json(repo, "capture", "--phase", "after")
    env = {**SERVER_ENV, "PYTHONIOENCODING": "cp1252"}
    undone = run_cli(repo, "undo", env=env)
    assert (undone.returncode, undone.stderr) == (0, ""), undone.stderr
    assert "tea?.txt" in undone.stdout and not (repo / "tea☕.txt").exists()
    listed = run_cli(repo, "list", "--json", env={**SERVER_ENV, "PYTHONIOENCODING": "ascii"})
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["turns"][0]["label"] == "Fix the ☕ bug"


# Ensures a refusal printed with stderr closed (`2>&-`) keeps stdout's `--json` valid: the
# one-line error went to stdout behind the JSON.
def test_cli_json_stays_valid_with_stderr_closed(repo: Path):
    cli_json(repo, "capture", "--label", "turn")
    done = run_cli(repo, "undo", "--turn", "999", "--json", preexec_fn=lambda: os.close(2))
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["data"]["field"] == "turn"


# Ensures `turnback undo` names, line by line, a deleted file no snapshot held (too large
# to keep), where it would otherwise list only what it changed.
def test_undo_prints_what_no_snapshot_held(repo: Path):
    env = {**SERVER_ENV, "TURNBACK_SETTINGS": '{"untrackedFileSizeLimit": 10}'}
    write(repo, "big.txt", "more than ten bytes\n")
    assert run_cli(repo, "capture", "--label", "t1", env=env).returncode == EXIT_OK
    (repo / "big.txt").unlink()
    write(repo, "agent.txt", "the agent's\n")
    done = run_cli(repo, "undo", env=env)
    assert done.returncode == EXIT_OK, done.stderr
    assert "Not brought back, as no snapshot held it: big.txt (tooLarge)" in done.stdout
    assert "  gone     big.txt (tooLarge: no snapshot held it)" in done.stdout
