"""Work trees on, or holding, other file systems, mounted for the test as a user has them:
a tmpfs mounted inside the project, and a FUSE view that refuses chmod (bindfs). Each test
skips where this process may not mount (not root, no FUSE, no bindfs)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import (
    SERVER_ENV,
    capture,
    cli_json,
    git,
    make_repo,
    read,
    run_cli,
    start_server,
    undo,
    write,
)
from turnback.core.native import filesystem_type
from turnback.engine import Engine

CASEFS = Path(__file__).parents[1] / "helpers" / "casefs.py"


@contextmanager
def mounted(command: list[str], where: Path) -> Iterator[None]:
    """`command` mounts something at `where` for the block; skips the test if it cannot."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.strip()}")
    try:
        yield
    finally:
        unmount = ["fusermount", "-u"] if command[0] == "bindfs" else ["umount"]
        subprocess.run([*unmount, str(where)], capture_output=True, check=False)


# Ensures a restore run as root (a dev container) keeps the owner of a file on a mount point
# inside the work tree, where the writer stages the file next to it (the rename across file
# systems fails): that path once gave the user's file to root.
def test_a_file_on_a_mount_inside_the_tree_keeps_its_owner(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    (repo / "volume").mkdir()
    with mounted(["mount", "-t", "tmpfs", "tmpfs", str(repo / "volume")], repo / "volume"):
        write(repo, "volume/data.txt", "the user's\n")
        os.chown(repo / "volume/data.txt", 1234, 1234)
        cli_json(repo, "capture", "--label", "turn")
        write(repo, "volume/data.txt", "the agent's\n")
        cli_json(repo, "capture", "--phase", "after")
        cli_json(repo, "undo")
        assert (repo / "volume/data.txt").read_text() == "the user's\n"
        st = os.lstat(repo / "volume/data.txt")
        assert (st.st_uid, st.st_gid) == (1234, 1234)


# Ensures undo and redo put the bytes back on a file system that refuses chmod (a FUSE or
# bind mount that denies it): the restore once failed on its first file, could not roll
# itself back (the rollback chmods too), and left every later undo failing.
def test_undo_and_redo_where_the_file_system_refuses_chmod(tmp_path: Path):
    if shutil.which("bindfs") is None:
        pytest.skip("bindfs is not installed (apt-get install bindfs)")
    backing, view = tmp_path / "backing", tmp_path / "view"
    make_repo(backing / "repo")
    view.mkdir()
    with mounted(["bindfs", "--chmod-deny", str(backing), str(view)], view):
        repo = view / "repo"
        cli_json(repo, "capture", "--label", "turn")
        write(repo, "README.md", "the agent's\n")
        write(repo, "src/new.py", "print('new')\n")
        cli_json(repo, "capture", "--phase", "after")
        cli_json(repo, "undo")
        assert (repo / "README.md").read_text() == "hello\n"
        assert not (repo / "src/new.py").exists()
        cli_json(repo, "redo")
        assert (repo / "README.md").read_text() == "the agent's\n"
        assert (repo / "src/new.py").read_text() == "print('new')\n"


# Ensures a work tree on a disk that keeps no exec bits (FAT, exFAT, WSL's Windows drives:
# every file reads 0777; bindfs shows it so here) captures a file with the mode it had: each
# file a turn touched was captured executable, the undo could not clear the bit, and the
# redo refused, taking every file for the user's edit. A git repository made there (`git
# init` sets filemode false), one copied there (its config says true) and a plain folder.
@pytest.mark.parametrize("kind", ["made there", "copied there", "plain folder"])
def test_a_disk_that_keeps_no_exec_bits(tmp_path: Path, kind: str):
    if shutil.which("bindfs") is None:
        pytest.skip("bindfs is not installed (apt-get install bindfs)")
    if kind != "made there" and filesystem_type(str(tmp_path)) is None:
        pytest.skip("statfs is Linux's (or TURNBACK_PORTABLE=1): off Linux the config is believed")
    backing, view = tmp_path / "backing", tmp_path / "view"
    backing.mkdir()
    view.mkdir()
    script = "#!/bin/sh\necho v1\n"
    if kind == "copied there":
        make_repo(backing / "w", {"README.md": "hello\n", "run.sh": script})
        git(backing / "w", "update-index", "--chmod=+x", "run.sh")
        git(backing / "w", "commit", "-qm", "executable")
    with mounted(["bindfs", "--perms=a+rwx", "--chmod-ignore", str(backing), str(view)], view):
        work = view / "w"
        if kind == "made there":
            make_repo(work, {"README.md": "hello\n", "run.sh": script})
            assert git(work, "config", "core.filemode").strip() == "false"
            git(work, "update-index", "--chmod=+x", "run.sh")
            git(work, "commit", "-qm", "executable")
        elif kind == "plain folder":
            write(work, "README.md", "hello\n")
            write(work, "run.sh", script)
        write(work, "notes.txt", "the user's\n")
        cli_json(work, "capture", "--label", "turn")
        write(work, "notes.txt", "the user's\n")  # written again, the same bytes
        write(work, "README.md", "the agent's\n")
        write(work, "run.sh", script + "echo v2\n")
        write(work, "new.txt", "new\n")
        cli_json(work, "capture", "--phase", "after")
        changed = ["README.md", "new.txt", "run.sh"]
        assert sorted(f["path"] for f in cli_json(work, "diff")["files"]) == changed
        cli_json(work, "undo")
        assert read(work, "README.md") == "hello\n" and read(work, "run.sh") == script
        assert not (work / "new.txt").exists()
        cli_json(work, "redo")  # refused before: "would overwrite changes made after the turn"
        assert read(work, "README.md") == "the agent's\n" and read(work, "new.txt") == "new\n"
        assert read(work, "run.sh") == script + "echo v2\n"
        if kind == "plain folder":
            [shadow] = (Path(SERVER_ENV["TURNBACK_DATA_DIR"]) / "shadows").glob("w-*")
            modes = git(shadow / "repo.git", "ls-tree", "-r", "refs/turnback/main/index")
        else:
            modes = git(work, "ls-tree", "-r", "refs/turnback/main/index")
        stored = {line.split("\t")[1]: line.split()[0] for line in modes.splitlines()}
        executable = "100644" if kind == "plain folder" else "100755"  # as first captured
        assert stored == {"README.md": "100644", "new.txt": "100644", "notes.txt": "100644"} | {
            "run.sh": executable
        }


# Ensures the reading commands work where `.git` may not be written (mounted read-only, or
# another user's repository read under `safe.directory`): they failed on opening the
# repository's lock for writing ("Permission denied ... free some space").
def test_reading_commands_work_on_a_read_only_git_directory(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "README.md", "the agent's\n")
    cli_json(repo, "capture", "--phase", "after")
    git_dir = str(repo / ".git")
    with mounted(["mount", "--bind", "-o", "ro", git_dir, git_dir], repo / ".git"):
        if os.access(git_dir, os.W_OK) and not os.statvfs(git_dir).f_flag & os.ST_RDONLY:
            pytest.skip("this kernel ignored ro on the bind mount")
        assert [t["turn"] for t in cli_json(repo, "list")["turns"]] == [1]
        assert [f["path"] for f in cli_json(repo, "diff")["files"]] == ["README.md"]


@contextmanager
def whole_second_timestamps(tmp_path: Path) -> Iterator[Path]:
    """An ext4 file system with 128-byte inodes, mounted for the block: its timestamps are
    whole seconds, as on ext3, HFS+, FAT (2 s) and kernels' coarse clocks at a larger scale."""
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed")
    image, mount_point = tmp_path / "seconds.img", tmp_path / "seconds"
    with open(image, "wb") as handle:
        handle.truncate(32 << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(image)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext4 failed: {made.stderr.decode(errors='replace')}")
    mount_point.mkdir()
    with mounted(["mount", "-o", "loop", str(image), str(mount_point)], mount_point):
        yield mount_point


def in_one_second(steps: Callable[[], float]) -> None:
    """Runs `steps` from the start of a second until it ends within that second (it returns
    the mtime, in seconds, of the file it wrote first); skips after 5 tries."""
    for _attempt in range(5):
        time.sleep(1.02 - time.time() % 1)
        second = int(time.time())
        if int(steps()) == second == int(time.time()):
            return
    pytest.skip("the steps never fit in one second on this machine")


def undo_of_an_agents_rewrite(repo: Path, rel: str) -> str:
    """A turn whose agent rewrites `rel`, undone (CLI): what `rel` holds then, which must be
    what it held before the turn."""
    cli_json(repo, "capture", "--label", "the agent's turn")
    write(repo, rel, "the agent rewrote it\n")
    cli_json(repo, "capture", "--phase", "after")
    cli_json(repo, "undo")
    return read(repo, rel)


# Ensures a same-size edit made in the same second as the capture that hashed the file is
# seen where timestamps are whole seconds: the entry's stat data matched, and once the
# private index was written in the next second (a slow machine; here its mtime is moved
# there) nothing marked the entry racy, so the next turn's snapshot held the agent's older
# bytes and its undo put them over the user's edit.
def test_a_same_second_edit_after_a_capture_is_seen(tmp_path: Path):
    with whole_second_timestamps(tmp_path) as disk:
        repo = make_repo(disk / "repo", {"a.txt": "version one\n"})
        engine = Engine(str(repo))

        def steps() -> float:
            write(repo, "a.txt", "the agent's\n")
            engine.capture(label="turn 1")
            engine.close()  # the private index written
            write(repo, "a.txt", "the user's!\n")  # the same size, the same second
            return os.stat(repo / "a.txt").st_ctime

        in_one_second(steps)
        index = repo / ".git" / "turnback" / "index"
        later = os.stat(index).st_mtime + 1
        os.utime(index, (later, later))
        assert undo_of_an_agents_rewrite(repo, "a.txt") == "the user's!\n"


# Ensures turnback's first capture sees a same-size edit made in the second of the user's
# `git commit`: git itself marks such an entry racy (`git status` shows it), but the copy
# of the user's index that seeds turnback's got a new mtime, so the entry looked clean and
# the undo of the first turn put the committed bytes over the user's edit.
def test_a_same_second_edit_after_git_commit_is_seen_by_the_first_capture(tmp_path: Path):
    with whole_second_timestamps(tmp_path) as disk:
        repo = make_repo(disk / "repo", {"README.md": "hello\n"})

        def steps() -> float:
            write(repo, "a.txt", "committed!\n")
            git(repo, "add", "a.txt")
            git(repo, "commit", "-qm", "a")
            write(repo, "a.txt", "the user's\n")  # the same size, the same second
            return os.stat(repo / "a.txt").st_ctime

        in_one_second(steps)
        time.sleep(1.1)
        assert undo_of_an_agents_rewrite(repo, "a.txt") == "the user's\n"


# Ensures a nested repository turnback may not write (a read-only checkout: its `.git`
# mounted read-only here) is reported and left alone, and the rest of the workspace is
# captured and undone: every capture of the whole workspace failed on it, so an agent's
# turns were never recorded.
def test_a_read_only_nested_repository_is_reported_and_the_rest_captured(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    vendor = make_repo(repo / "vendor", {"v.txt": "vendored\n"})
    git_dir = str(vendor / ".git")
    with mounted(["mount", "--bind", "-o", "ro", git_dir, git_dir], vendor / ".git"):
        if os.access(git_dir, os.W_OK):
            pytest.skip("this kernel ignored ro on the bind mount")
        turn = cli_json(repo, "capture", "--label", "turn")
        assert {"path": "vendor", "reason": "nestedRepository"} in turn["skipped"]
        write(repo, "README.md", "the agent's\n")
        write(repo, "vendor/v.txt", "the agent's too\n")
        cli_json(repo, "capture", "--phase", "after")
        cli_json(repo, "undo")
        assert read(repo, "README.md") == "hello\n"
        assert read(repo, "vendor/v.txt") == "the agent's too\n"  # never captured: kept


# Ensures the warning a Stop hook gives for a turn it could not record names a log that
# exists: with `.git` read-only, it named `.git/turnback/hook.log`, which could not be
# written, and the error was logged nowhere. The user's state folder keeps it then.
def test_a_hook_on_a_read_only_git_directory_logs_where_it_says(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    git_dir = str(repo / ".git")
    env = {**SERVER_ENV, "XDG_STATE_HOME": str(tmp_path / "state")}

    def hook(event: str) -> subprocess.CompletedProcess:
        payload = {"session_id": "ro", "cwd": str(repo), "hook_event_name": event}
        if event == "UserPromptSubmit":
            payload["prompt"] = "edit the readme"
        return run_cli(repo, "hook", "claude-code", event, env=env, input=json.dumps(payload))

    with mounted(["mount", "--bind", "-o", "ro", git_dir, git_dir], repo / ".git"):
        if os.access(git_dir, os.W_OK):
            pytest.skip("this kernel ignored ro on the bind mount")
        assert hook("UserPromptSubmit").returncode == 0
        stop = hook("Stop")
    assert stop.returncode == 0
    message = json.loads(stop.stdout)["systemMessage"]
    assert "did not record this turn" in message
    log = Path(message.rsplit("log: ", 1)[1].rstrip(")"))
    assert log.is_file() and "before:" in log.read_text()


# Ensures a server whose work tree is a FUSE view (bindfs here; sshfs, virtiofs and WSL's
# 9p drives alike) does not trust inotify, which never hears of an edit made through the
# other side of the mount: the watcher's capture missed the user's edit, and the undo of
# the agent's next turn put back a stale copy over it.
async def test_a_server_on_a_fuse_view_sees_edits_made_from_the_other_side(tmp_path: Path):
    if shutil.which("bindfs") is None:
        pytest.skip("bindfs is not installed (apt-get install bindfs)")
    backing, view = tmp_path / "backing", tmp_path / "view"
    make_repo(backing / "repo")
    view.mkdir()
    with mounted(["bindfs", str(backing), str(view)], view):
        repo = view / "repo"
        async with start_server(repo) as client:
            await capture(client, label="warm-up")
            await capture(client, phase="after")
            await asyncio.sleep(1.0)  # a watcher would be set up by now
            write(backing / "repo", "README.md", "the user's edit, from the other side\n")
            await capture(client, label="the agent's turn")
            (repo / "README.md").unlink()
            await capture(client, phase="after")
            await undo(client)
        assert read(repo, "README.md") == "the user's edit, from the other side\n"


@contextmanager
def case_insensitive_view(
    backing: Path, view: Path, inode_per_name: bool = False
) -> Iterator[None]:
    """`backing` served case-insensitively at `view` (tests/helpers/casefs.py) for the block;
    `inode_per_name`: each spelling with an inode of its own, as exFAT through FUSE."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    try:
        import fuse  # noqa: F401  (fusepy: it needs libfuse2, which bindfs brings)
    except (ImportError, OSError) as missing:
        pytest.skip(f"no FUSE for Python here: {missing}")
    view.mkdir(exist_ok=True)
    flags = ["--inode-per-name"] if inode_per_name else []
    server = subprocess.Popen([sys.executable, str(CASEFS), str(backing), str(view), *flags])
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(view):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.skip("the case-insensitive FUSE view did not mount")
            time.sleep(0.05)
        yield
    finally:
        subprocess.run(["fusermount", "-u", str(view)], capture_output=True, check=False)
        server.wait(timeout=10)


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# Ensures an agent's case-only rename in a plain folder on a case-insensitive file system
# (WSL's Windows drives, a share) is undone without loss. The shadow repository, made on
# the user's case-sensitive data folder, compared names case-sensitively: the turn's end
# held Foo.c and foo.c, one file on disk, and the undo deleted foo.c, that is, the file.
# With an inode per spelling (exFAT through FUSE), turnback took the disk for one that
# tells cases apart, and the undo deleted the file.
@pytest.mark.parametrize("inode_per_name", [False, True], ids=["one inode", "inode per name"])
def test_a_case_only_rename_in_a_plain_folder_on_a_case_insensitive_view(
    tmp_path: Path, inode_per_name: bool
):
    backing, view = tmp_path / "backing", tmp_path / "view"
    write(backing / "plain", "Foo.c", "int main() {}\n")
    write(backing / "plain", "other.txt", "other\n")
    with case_insensitive_view(backing, view, inode_per_name):
        folder = view / "plain"
        cli_json(folder, "capture", "--label", "rename")
        os.rename(folder / "Foo.c", folder / "foo.c")
        cli_json(folder, "capture", "--phase", "after")
        undone = cli_json(folder, "undo")
        assert undone["kept"] == []  # one file, one name: as git sees it there
        [name] = [n for n in _names(folder) if n.lower() == "foo.c"]
        assert (folder / name).read_text() == "int main() {}\n"
        cli_json(folder, "redo")
        assert (folder / "foo.c").read_text() == "int main() {}\n"
    # Written to the shadow's own config, never to a file git's environment names: the test
    # runs with GIT_CONFIG_NOSYSTEM, and a write once replaced /dev/null with a file.
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


# Ensures the same in a git repository made on such a disk (git init finds it folds case),
# where each spelling has an inode of its own (exFAT through FUSE): the undo printed
# "deleted foo.c", and Foo.c, the same file, was gone.
def test_a_case_only_rename_in_a_repository_on_exfat_through_fuse(tmp_path: Path):
    backing, view = tmp_path / "backing", tmp_path / "view"
    backing.mkdir()
    with case_insensitive_view(backing, view, inode_per_name=True):
        repo = make_repo(view / "repo", {"Foo.c": "int main() {}\n", "README.md": "hi\n"})
        assert git(repo, "config", "core.ignorecase").strip() == "true"
        cli_json(repo, "capture", "--label", "rename")
        os.rename(repo / "Foo.c", repo / "foo.c")
        cli_json(repo, "capture", "--phase", "after")
        cli_json(repo, "undo")
        [name] = [n for n in _names(repo) if n.lower() == "foo.c"]
        assert (repo / name).read_text() == "int main() {}\n"


# Ensures a restore never deletes a name that is the same file as one it keeps: on a file
# system that takes a name's Unicode forms for one (macOS), an agent's rename of `café.txt`
# (NFC) to its NFD spelling is captured as a new name beside the old, one file on disk; the
# undo keeps the NFD name, naming the other, instead of deleting the file.
@pytest.mark.parametrize("inode_per_name", [False, True], ids=["one inode", "inode per name"])
def test_undo_never_deletes_another_name_of_a_file_it_keeps(tmp_path: Path, inode_per_name: bool):
    nfc, nfd = "caf\u00e9.txt", "cafe\u0301.txt"
    backing, view = tmp_path / "backing", tmp_path / "view"
    make_repo(backing / "repo", {nfc: "the user's\n", "README.md": "hello\n"})
    with case_insensitive_view(backing, view, inode_per_name):
        repo = view / "repo"
        cli_json(repo, "capture", "--label", "rename")
        os.rename(repo / nfc, repo / nfd)
        cli_json(repo, "capture", "--phase", "after")
        undone = cli_json(repo, "undo")
        [name] = [n for n in _names(repo) if n.endswith(".txt")]
        assert (repo / name).read_text() == "the user's\n"
        assert {"path": nfd, "reason": "sameFile", "by": nfc} in undone["kept"]
