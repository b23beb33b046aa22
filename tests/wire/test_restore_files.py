"""What a restore does to the files themselves: permission bits, and special files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from helpers import cli_json, make_repo, run_cli, write


def _mode(repo: Path, rel: str) -> int:
    return stat.S_IMODE(os.lstat(repo / rel).st_mode)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Ensures undo and redo keep the permission bits the file on disk had (0600, 0444), with
# only the exec bit following the snapshot, and a recreated file gets the umask default.
def test_undo_and_redo_keep_the_files_permission_bits(tmp_path: Path):
    repo = make_repo(
        tmp_path / "repo",
        {"secret.env": "TOKEN=1\n", "frozen.txt": "v1\n", "tool.sh": "echo 1\n", "gone.txt": "x\n"},
    )
    os.chmod(repo / "secret.env", 0o600)
    os.chmod(repo / "frozen.txt", 0o444)
    os.chmod(repo / "tool.sh", 0o700)
    cli_json(repo, "capture", "--label", "turn")
    for rel in ("secret.env", "frozen.txt", "tool.sh"):  # edited in place: modes stay
        with open(repo / rel, "a") as handle:
            handle.write("edited by the agent\n")
    os.chmod(repo / "tool.sh", 0o600)  # the agent also drops the exec bit
    (repo / "gone.txt").unlink()
    cli_json(repo, "capture", "--phase", "after")

    cli_json(repo, "undo")
    assert (repo / "secret.env").read_text() == "TOKEN=1\n"
    assert _mode(repo, "secret.env") == 0o600
    assert _mode(repo, "frozen.txt") == 0o444
    assert _mode(repo, "tool.sh") == 0o700  # exec back, where it is readable
    assert _mode(repo, "gone.txt") == 0o644 & ~_umask()

    cli_json(repo, "redo")
    assert (repo / "frozen.txt").read_text() == "v1\nedited by the agent\n"
    assert _mode(repo, "secret.env") == 0o600
    assert _mode(repo, "frozen.txt") == 0o444
    assert _mode(repo, "tool.sh") == 0o600


# Ensures undo of a turn that replaced a tracked file with a FIFO returns in bounded
# time, never opens, replaces or deletes the FIFO (it could not be saved), and says so.
def test_undo_of_a_turn_that_made_a_fifo_never_blocks(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"pipe": "a tracked file\n", "b.txt": "b\n"})
    cli_json(repo, "capture", "--label", "turn")
    (repo / "pipe").unlink()
    os.mkfifo(repo / "pipe")
    write(repo, "b.txt", "agent\n")
    cli_json(repo, "capture", "--phase", "after")

    # A blocked open would hang for ever: fail instead.
    done = run_cli(repo, "undo", "--json", timeout=15)
    assert done.returncode == 0, done.stderr
    assert "pipe" in {k["path"] for k in json.loads(done.stdout)["kept"]}
    assert stat.S_ISFIFO(os.lstat(repo / "pipe").st_mode)
    assert (repo / "b.txt").read_text() == "b\n"


# Ensures an undo that must put a file back where the turn made a directory, in which the
# user has since added a file, keeps that directory (reported `blocked` by the user's file)
# and does the rest, where it used to fail whole with "directory not empty" even forced.
def test_undo_keeps_a_directory_the_user_added_to(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"x": "a file\n", "b.txt": "b\n"})
    cli_json(repo, "capture", "--label", "turn")
    (repo / "x").unlink()
    write(repo, "x/a", "the agent's\n")
    write(repo, "b.txt", "agent\n")
    cli_json(repo, "capture", "--phase", "after")
    write(repo, "x/mine", "the user's\n")
    undone = cli_json(repo, "undo")
    assert undone["kept"] == [{"path": "x", "reason": "blocked", "by": "x/mine"}]
    assert sorted(f["path"] for f in undone["files"]) == ["b.txt", "x/a"]
    assert (repo / "x/mine").read_text() == "the user's\n" and not (repo / "x/a").exists()
    assert (repo / "b.txt").read_text() == "b\n"


# Ensures files dated before 1970 or after 2038 (an archive with bogus times, clock skew)
# are captured and restored: the index's signed 32-bit seconds once made every capture an
# internal error, so such a turn could not even be undone.
def test_files_dated_before_1970_or_after_2038_are_captured_and_undone(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    dates = {"old.txt": -3_600, "future.txt": 2_208_988_800, "far.txt": 7_258_118_400}
    cli_json(repo, "capture", "--label", "unpack an archive")
    for rel, when in dates.items():
        write(repo, rel, f"{rel} from the archive\n")
        os.utime(repo / rel, (when, when))
    write(repo, "README.md", "the agent's\n")
    turn = cli_json(repo, "capture", "--phase", "after")
    assert {f["path"] for f in cli_json(repo, "diff")["files"]} == {"README.md", *dates}, turn
    cli_json(repo, "undo")
    assert (repo / "README.md").read_text() == "hello\n"
    assert not any((repo / rel).exists() for rel in dates)
    cli_json(repo, "redo")
    assert all((repo / rel).read_text() == f"{rel} from the archive\n" for rel in dates)


# Ensures a file named as Windows or macOS would take `.git` (`git~1`, `.git.`), which git
# refuses to keep, is reported and left alone: it made every capture fail ("files kept
# changing"), so the agent's turn around it could be neither sealed nor undone.
def test_names_git_refuses_are_reported_and_the_turn_still_undoes(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "README.md", "the agent's\n")
    for name in ("git~1", "sub/.git."):
        write(repo, name, "x\n")
    after = cli_json(repo, "capture", "--phase", "after")
    reported = {(s["path"], s["reason"]) for s in after["skipped"]}
    assert reported == {("git~1", "invalidPath"), ("sub/.git.", "invalidPath")}
    undone = cli_json(repo, "undo")
    assert (repo / "README.md").read_text() == "hello\n"
    assert {"path": "git~1", "reason": "invalidPath"} in undone["kept"]
    assert (repo / "git~1").read_text() == "x\n"
