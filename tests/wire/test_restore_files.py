"""What a restore does to the files themselves: permission bits, and special files."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from helpers import cli_json, git, make_repo, run_cli, write


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


def _acl(path: Path) -> str:
    return subprocess.run(
        ["getfacl", "-pc", str(path)], capture_output=True, text=True, check=True
    ).stdout


# Ensures a file an undo rewrites keeps its POSIX ACL, and one it brings back into a folder
# with a default ACL gets the ACL git's checkout gives: the ACL was dropped and its mask
# (which `st_mode` shows as the group bits) left as the group's bits, so the owning group
# gained write access; the folder's default never reached a file made in staging.
def test_undo_keeps_acls_and_a_folders_default_acl(tmp_path: Path):
    if shutil.which("setfacl") is None:
        pytest.skip("no setfacl here (Debian's acl package)")
    files = {"secret.txt": "s\n", "team/plan.txt": "p\n", "team/notes.txt": "n\n"}
    repo = make_repo(tmp_path / "repo", files)
    os.chmod(repo / "secret.txt", 0o640)
    acl = subprocess.run(["setfacl", "-m", "u:nobody:rw", str(repo / "secret.txt")], check=False)
    if acl.returncode != 0:
        pytest.skip("this file system keeps no ACLs")
    subprocess.run(["setfacl", "-d", "-m", "u:nobody:rw", str(repo / "team")], check=True)
    with_acl, without = _acl(repo / "secret.txt"), _acl(repo / "team/notes.txt")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "secret.txt", "agent\n")
    write(repo, "team/notes.txt", "agent\n")  # made before the folder's default: no ACL
    (repo / "team/plan.txt").unlink()
    cli_json(repo, "capture", "--phase", "after")
    cli_json(repo, "undo")
    assert _acl(repo / "secret.txt") == with_acl  # group::r--, user:nobody:rw-
    assert _acl(repo / "team/notes.txt") == without  # not the folder's default, never its
    write(repo, "team/git.txt", "g\n")  # and a file git's checkout makes there
    git(repo, "add", "team/git.txt")
    (repo / "team/git.txt").unlink()
    git(repo, "checkout", "--", "team/git.txt")
    assert _acl(repo / "team/plan.txt").replace("plan.txt", "git.txt") == _acl(
        repo / "team/git.txt"
    )


# Ensures files an undo writes into a setgid folder get its group for a user who is not in
# that group (run here as root without CAP_CHOWN): made in staging, they kept the user's
# own group, where git, or any program writing there, gives the folder's.
def test_undo_in_a_setgid_folder_gives_the_folders_group(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a folder another group")
    repo = make_repo(tmp_path / "repo", {"shared/edited.txt": "e\n", "shared/report.txt": "r\n"})
    shared = repo / "shared"
    os.chown(shared, -1, 2000)
    os.chmod(shared, 0o2777)
    for name in ("edited.txt", "report.txt"):
        os.chown(shared / name, -1, 2000)
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "shared/edited.txt", "agent\n")
    (repo / "shared/report.txt").unlink()
    cli_json(repo, "capture", "--phase", "after")
    done = run_cli(repo, "undo", preexec_fn=_without_chown)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [os.lstat(shared / n).st_gid for n in ("edited.txt", "report.txt")] == [2000, 2000]


def _without_chown() -> None:
    """In the child: no CAP_CHOWN, as a user who is not in the folder's group."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(24, 0, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_CHOWN
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
