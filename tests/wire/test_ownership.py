"""Another user's repository, as root meets it (`sudo turnback`, a dev container over a
bind-mounted project), and a repository a group shares. Through the real CLI; the user is a
bare uid (no account needed), and their own git runs under `setpriv`. Each test skips
where this process is not root."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import GIT_ENV, SERVER_ENV, git, make_repo, read, run_cli, write

USER = 4321


def chown_tree(top: Path, uid: int) -> None:
    for folder, dirs, files in os.walk(top):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, uid, uid, follow_symlinks=False)


def as_user(cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` run as the repository's owner, as they would after turnback ran as root."""
    wrap = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups"]
    return subprocess.run(
        [*wrap, *command], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False
    )


def root_owned(top: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(top):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            if os.lstat(name).st_uid == 0:
                found.append(os.path.relpath(name, top))
    return found


@pytest.fixture
def users_repo() -> Iterator[Path]:
    """A repository of the user's, in a folder they can reach (pytest's are root's, 0700)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    home = Path(tempfile.mkdtemp(prefix="turnback-user-"))
    try:
        os.chmod(home, 0o755)
        repo = make_repo(home / "repo", {"README.md": "hello\n", "docs/guide.md": "read me\n"})
        chown_tree(repo, USER)
        yield repo
    finally:
        shutil.rmtree(home, ignore_errors=True)


def cli(repo: Path, *args: str) -> None:
    env = {**SERVER_ENV, "SUDO_UID": str(USER)}  # as `sudo` sets it: git trusts the repository
    done = run_cli(repo, *args, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


# Ensures turnback run as root leaves nothing of root's in the user's `.git`: the object
# folders, `refs/turnback` and `.git/turnback` it made were root's, after which the user's
# own `git commit` failed ("insufficient permission for adding an object") and so did every
# turnback command of theirs (the lock was root's).
def test_root_leaves_the_users_repository_theirs(users_repo: Path):
    repo = users_repo
    cli(repo, "capture", "--label", "turn")
    write(repo, "README.md", "the agent's\n")
    write(repo, "src/new.py", "print('new')\n")
    cli(repo, "capture", "--phase", "after")
    cli(repo, "undo")
    cli(repo, "list")
    assert root_owned(repo / ".git") == []
    write(repo, "notes.txt", "the user's own, after\n")
    os.chown(repo / "notes.txt", USER, USER)
    assert as_user(repo, "git", "add", "notes.txt").returncode == 0
    done = as_user(repo, "git", "commit", "-qm", "mine")
    assert done.returncode == 0, done.stderr


# Ensures the same in a linked worktree, whose turnback state is in its own git directory
# but whose lock is the main one's: that lock's folder stayed root's, and the user's next
# capture in the main worktree failed.
def test_root_in_a_linked_worktree_leaves_the_repository_theirs(users_repo: Path):
    linked = users_repo.parent / "linked"
    linked.mkdir()
    os.chown(linked, USER, USER)
    made = as_user(users_repo, "git", "worktree", "add", "-q", str(linked))
    assert made.returncode == 0, made.stderr
    cli(linked, "capture", "--label", "turn")
    write(linked, "README.md", "the agent's\n")
    cli(linked, "capture", "--phase", "after")
    assert root_owned(users_repo / ".git") == []


# Ensures an undo run as root gives the files and folders it brings back to the folder's
# owner: a file the turn deleted came back root's, which the user could no longer edit.
def test_root_undo_brings_deleted_files_back_as_the_users(users_repo: Path):
    repo = users_repo
    cli(repo, "capture", "--label", "turn")
    shutil.rmtree(repo / "docs")
    cli(repo, "capture", "--phase", "after")
    cli(repo, "undo")
    assert read(repo, "docs/guide.md") == "read me\n"
    for path in (repo / "docs", repo / "docs/guide.md"):
        assert (os.lstat(path).st_uid, os.lstat(path).st_gid) == (USER, USER)


# Ensures `hooks install` run as root leaves the user's settings file theirs, and makes
# what it adds theirs: the settings file became root's, and the user's own uninstall failed.
def test_root_hook_install_keeps_the_users_files_theirs(users_repo: Path):
    repo = users_repo
    settings = write(repo, ".claude/settings.json", '{"theme": "dark"}\n')
    chown_tree(repo / ".claude", USER)
    cli(repo, "hooks", "install", "claude-code")
    cli(repo, "hooks", "install", "cline")
    assert root_owned(repo / ".claude") == [] and root_owned(repo / ".clinerules") == []
    assert "turnback" in settings.read_text()


# Ensures in a repository a group shares (`git init --shared=group`) the folders turnback
# makes for its state and refs are group-writable, as git makes its own there: another
# member's capture could not write `.git/turnback` or `refs/turnback`.
def test_a_shared_repository_keeps_turnbacks_folders_group_writable(tmp_path: Path):
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--shared=group")
    write(repo, "README.md", "hello\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    old = os.umask(0o022)
    try:
        assert run_cli(repo, "capture", "--label", "turn").returncode == 0
        write(repo, "README.md", "the agent's\n")
        assert run_cli(repo, "capture", "--phase", "after").returncode == 0
    finally:
        os.umask(old)
    for top in (repo / ".git/turnback", repo / ".git/refs/turnback"):
        for folder, _dirs, _files in os.walk(top):
            assert stat.S_IMODE(os.lstat(folder).st_mode) & 0o070 == 0o070, folder
