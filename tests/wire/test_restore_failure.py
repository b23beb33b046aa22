"""Restores that fail midway roll back, and forced restores never lose what they overwrite."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from pygls.exceptions import JsonRpcException

from helpers import (
    cli_json,
    git,
    make_repo,
    read,
    request,
    run_cli,
    tree_state,
    without_root_overrides,
    write,
)


# Ensures a restore that fails midway puts back what it had written and reports restoreFailed.
async def test_failed_restore_rolls_back(client, repo: Path):
    write(repo, "zz.txt", "tracked, sorted after README.md\n")
    git(repo, "add", "zz.txt")
    git(repo, "commit", "-q", "-m", "zz")
    await request(client, "snapshot/capture", {"label": "turn"})
    write(repo, "README.md", "agent readme\n")
    write(repo, "zz.txt", "agent zz\n")
    await request(client, "snapshot/capture", {"phase": "after"})
    # An immutable file refuses even root: the undo writes README.md, then fails on zz.txt.
    immutable = subprocess.run(["chattr", "+i", str(repo / "zz.txt")], capture_output=True)
    if immutable.returncode != 0:
        pytest.skip(f"no immutable files here: {immutable.stderr.decode().strip()}")
    try:
        with pytest.raises(JsonRpcException) as failure:
            await request(client, "snapshot/undo")
    finally:
        subprocess.run(["chattr", "-i", str(repo / "zz.txt")], check=True)
    assert failure.value.code == -32803
    data = json.loads(json.dumps(failure.value.data, default=lambda o: o._asdict()))
    assert data["reason"] == "restoreFailed"
    assert data["rolledBack"] is True and data["path"] == "zz.txt"
    assert data["kept"] == []  # nobody changed a file while the undo ran
    assert read(repo, "README.md") == "agent readme\n"
    assert read(repo, "zz.txt") == "agent zz\n"
    listing = await request(client, "snapshot/list")
    assert [t["state"] for t in listing["turns"]] == ["active"]


# Ensures a forced redo keeps what it overwrote in the timeline, reachable from its ref.
async def test_forced_redo_saves_what_it_overwrote(client, repo: Path):
    await request(client, "snapshot/capture", {"label": "turn"})
    write(repo, "src/app.py", "print('agent')\n")
    await request(client, "snapshot/capture", {"phase": "after"})
    await request(client, "snapshot/undo")
    write(repo, "src/app.py", "print('mine, after the undo')\n")

    with pytest.raises(JsonRpcException) as conflict:
        await request(client, "snapshot/redo")
    assert conflict.value.code == -32803
    result = await request(client, "snapshot/redo", {"force": True})
    assert result["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('agent')\n"

    timeline = json.loads(git(repo, "show", "refs/turnback/main/sessions/default:session.json"))
    assert timeline["rescued"], "the overwritten state must be kept"
    saved = git(repo, "show", f"{timeline['rescued'][-1]['commit']}:src/app.py")
    assert saved == "print('mine, after the undo')\n"


def run_as_user(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`turnback <args>` as a process that file permissions apply to."""
    return run_cli(root, *args, preexec_fn=without_root_overrides)


# Ensures an undo that cannot write into a read-only directory names the file and the
# cause, says truthfully what was written and rolled back, ends its journal, and leaves
# the next command (an agent hook's capture) working without a chmod.
@pytest.mark.parametrize("written_first", [False, True], ids=["nothing-written", "one-written"])
def test_permission_denied_restore_names_the_file_and_the_next_command_works(
    tmp_path: Path, written_first: bool
):
    files = {"docs/guide.md": "guide\n", "src/app.py": "app\n"}
    if written_first:
        files["README.md"] = "readme\n"  # sorts first: written before docs/ refuses
    repo = make_repo(tmp_path / "repo", files)
    cli_json(repo, "capture", "--label", "turn")
    for rel in files:
        write(repo, rel, f"{rel} edited by the agent\n")
    cli_json(repo, "capture", "--phase", "after")
    agent_state = tree_state(repo)
    os.chmod(repo / "docs", 0o555)
    try:
        done = run_as_user(repo, "undo")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "permission denied on docs/guide.md" in done.stderr
        assert "NOT yet rolled back" not in done.stderr
        expected = "1 file was already written: rolled back" if written_first else "Nothing"
        assert expected in done.stderr
        assert tree_state(repo) == agent_state
        assert "journal" not in git(repo, "for-each-ref", "refs/turnback")

        nxt = run_as_user(repo, "capture", "--label", "next", "--json")
        assert nxt.returncode == 0, nxt.stdout + nxt.stderr
        assert "rolled back" not in nxt.stderr  # nothing was left to recover
    finally:
        os.chmod(repo / "docs", 0o755)
    listing = cli_json(repo, "list")
    assert [t["state"] for t in listing["turns"]] == ["active", "active"]


# Ensures a file the user may not read stops a capture with one line naming the file and
# the cause (exit 1), not "Files kept changing ... try again" three whole scans later.
def test_unreadable_file_is_named_by_the_capture(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, "key.pem", "secret\n")
    os.chmod(repo / "key.pem", 0)
    done = run_as_user(repo, "capture", "--label", "turn")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Permission denied" in done.stderr and "key.pem" in done.stderr
    assert "kept changing" not in done.stderr


# Ensures a folder the user may not list is reported `unreadable` by the capture and kept
# by the undo once it can be read again (libgit2 skipped it without a word, so the undo
# deleted the user's file as something the turn had made).
def test_unreadable_folder_is_reported_and_kept_by_the_undo(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, "private/notes.txt", "the user's\n")
    os.chmod(repo / "private", 0)
    try:
        done = run_as_user(repo, "capture", "--label", "turn", "--json")
    finally:
        os.chmod(repo / "private", 0o755)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["skipped"] == [{"path": "private", "reason": "unreadable"}]
    write(repo, "a.txt", "agent\n")
    cli_json(repo, "capture", "--phase", "after")

    undone = json.loads(run_as_user(repo, "undo", "--json").stdout)
    assert {"path": "private/notes.txt", "reason": "unreadable"} in undone["kept"]
    assert read(repo, "private/notes.txt") == "the user's\n"
    assert read(repo, "a.txt") == "a\n"


# Ensures a turn that makes a folder of tracked files unreadable gets an undo and a redo
# that leave the folder alone: the files stay as last captured instead of "deleted", and
# no rollback deletes them once the user makes the folder readable again.
def test_folder_made_unreadable_by_the_turn_is_left_alone(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "closed/c.txt": "tracked\n"})
    assert run_as_user(repo, "capture", "--label", "turn").returncode == 0
    write(repo, "a.txt", "agent\n")
    os.chmod(repo / "closed", 0)
    try:
        after = run_as_user(repo, "capture", "--phase", "after", "--json")
        assert json.loads(after.stdout)["skipped"] == [{"path": "closed", "reason": "unreadable"}]
        diff = run_as_user(repo, "diff", "1")
        assert "closed/c.txt" not in diff.stdout  # not known to be deleted
        undone = run_as_user(repo, "undo", "--json")
        assert undone.returncode == 0, undone.stdout + undone.stderr
        assert read(repo, "a.txt") == "a\n"
        assert json.loads(undone.stdout)["kept"] == [{"path": "closed", "reason": "unreadable"}]
    finally:
        os.chmod(repo / "closed", 0o755)
    redone = run_as_user(repo, "redo")
    assert redone.returncode == 0, redone.stdout + redone.stderr
    assert "rolled back" not in redone.stderr
    assert read(repo, "closed/c.txt") == "tracked\n"
    assert read(repo, "a.txt") == "agent\n"
    assert git(repo, "status", "--porcelain") == " M a.txt\n"


# Ensures a tracked file the agent made unreadable fails the capture with words naming the
# file and the permissions, not "files kept changing" after three retries (libgit2's
# refusal to read it was taken for a file changing under it).
def test_tracked_file_made_unreadable_is_a_permission_error(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    assert run_as_user(repo, "capture", "--label", "turn").returncode == 0
    write(repo, "b.txt", "agent\n")
    os.chmod(repo / "a.txt", 0)
    try:
        done = run_as_user(repo, "capture", "--phase", "after")
    finally:
        os.chmod(repo / "a.txt", 0o644)
    assert done.returncode == 1
    assert "Permission denied (" in done.stderr and "a.txt" in done.stderr
    assert "kept changing" not in done.stderr and "is locked" not in done.stderr  # libgit2's


# Ensures an undo needing a blob that was lost (a loose object deleted, an alternate gc'ed)
# refuses before writing anything: it wrote the files before it, said "Nothing was
# changed" and left its journal for the next command to roll back.
def test_undo_with_a_lost_object_writes_nothing(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a1\n"})
    write(repo, "a.txt", "a: my uncommitted edit\n")
    write(repo, "b.txt", "b: my untracked notes\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "a.txt", "agent a\n")
    (repo / "b.txt").unlink()
    cli_json(repo, "capture", "--phase", "after")
    lost = str(pygit2.hash(b"b: my untracked notes\n"))
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    agent_state = tree_state(repo)

    done = run_cli(repo, "undo")
    assert done.returncode == 1, done.stdout + done.stderr
    assert lost in done.stderr and "Nothing was changed" in done.stderr
    assert tree_state(repo) == agent_state
    assert "journal" not in git(repo, "for-each-ref", "refs/turnback")


# Ensures an undo refused by an append-only folder (`chattr +a`) names the likely cause,
# here and in the recovery that meets it again, where "operation not permitted" alone
# left users guessing while every command failed.
def test_append_only_folder_is_named_as_the_likely_cause(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"logs/b.txt": "b\n", "c.txt": "c\n"})
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "logs/b.txt", "agent b\n")
    write(repo, "c.txt", "agent c\n")
    cli_json(repo, "capture", "--phase", "after")
    append_only = subprocess.run(["chattr", "+a", str(repo / "logs")], capture_output=True)
    if append_only.returncode != 0:
        pytest.skip(f"no append-only folders here: {append_only.stderr.decode().strip()}")
    try:
        done = run_cli(repo, "undo")
    finally:
        subprocess.run(["chattr", "-a", str(repo / "logs")], check=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "operation not permitted on logs/b.txt (is the file or its folder immutable" in (
        done.stderr
    )
    assert "lsattr" in done.stderr
