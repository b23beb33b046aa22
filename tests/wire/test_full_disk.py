"""A full disk under the repository: a clear error, nothing recorded, nothing lost.

The repository lives on a real tmpfs of 4 MiB, mounted for the test (the suite runs as
root; where mounting is not allowed the tests are skipped), filled by a file until the
kernel answers ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import (
    SERVER_ENV,
    capture,
    git_run,
    list_turns,
    make_repo,
    run_cli,
    start_server,
    write,
)
from turnback.engine import Engine
from turnback.errors import RestoreFailed, StorageFailed
from turnback.restore import undo_redo


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Writes a file until the disk is full, then frees `leave` bytes of it; returns it, to
    be deleted to make room."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def edit_all(root: Path, version: str) -> None:
    for n in range(10):
        write(root, f"f{n}.txt", f"{version} {n}\n" * 40)


# Fails when a capture on a full disk is reported as files changing or as a bug, records
# a turn, or leaves the repository with a ref to an object that is not there.
def test_a_capture_on_a_full_disk_says_so_and_records_nothing(small_disk: Path):
    root = make_repo(small_disk / "repo", {f"f{n}.txt": f"v0 {n}\n" for n in range(10)})
    engine = Engine(str(root))
    engine.capture(session="s")
    edit_all(root, "v1")
    engine.capture(session="s", phase="after")
    edit_all(root, "v2")
    filler = fill(small_disk)

    with pytest.raises(StorageFailed, match="No space left on device"):
        engine.capture(session="s")
    assert len(engine.list("s").turns) == 1

    filler.unlink()
    engine.capture(session="s")  # room again: it records
    assert len(engine.list("s").turns) == 2
    fsck = git_run(root, "fsck", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    engine.close()


# Fails when the command line answers a full disk with anything but its documented
# `storageFailed` error (as JSON with --json, so a harness can tell it apart).
def test_the_command_line_reports_a_full_disk_as_storage_failed(small_disk: Path):
    root = make_repo(small_disk / "repo", {f"f{n}.txt": f"v0 {n}\n" for n in range(10)})
    edit_all(root, "v1")
    fill(small_disk)

    done = run_cli(root, "capture", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["data"]["reason"] == "storageFailed"
    assert "No space left on device" in error["message"]


# Fails when a new untracked file on a full disk, after a first capture, is reported as
# files changing: libgit2 refuses that blob with a GitError carrying an earlier call's
# message ("index does not contain new.bin"), not an OSError.
def test_a_new_file_on_a_full_disk_is_storage_failed(small_disk: Path):
    root = make_repo(small_disk / "repo", {"a.txt": "a\n"})
    assert run_cli(root, "capture", "--session", "s").returncode == 0
    write(root, "new.bin", os.urandom(50_000))
    fill(small_disk)
    done = run_cli(root, "capture", "--session", "s", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["data"]["reason"] == "storageFailed", error
    assert "No space left on device" in error["message"]


# Fails when the server answers a full disk as a bug (InternalError) rather than its
# documented `storageFailed`, or does not answer the next request once there is room.
async def test_the_server_reports_a_full_disk_as_storage_failed(small_disk: Path):
    root = make_repo(small_disk / "repo", {f"f{n}.txt": f"v0 {n}\n" for n in range(10)})
    async with start_server(root) as client:
        await capture(client, label="before the disk filled")
        edit_all(root, "v1")
        filler = fill(small_disk)
        with pytest.raises(JsonRpcException) as refused:
            await capture(client, label="on a full disk")
        assert refused.value.code == -32803
        assert refused.value.data["reason"] == "storageFailed"
        assert "No space left on device" in refused.value.message
        filler.unlink()
        assert (await capture(client, label="room again"))["turn"] == 2
        assert len((await list_turns(client))["turns"]) == 2


# Fails when an undo whose timeline cannot move (the disk filled once its files were
# written) loses the user's files or leaves the work tree undone while the timeline says
# it is not. With the disk still full, putting the files back fails too: the error says
# so, and the next operation's recovery does it once there is room.
def test_an_undo_that_cannot_commit_on_a_full_disk_is_put_back(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
):
    root = make_repo(small_disk / "repo", {f"f{n}.txt": f"v0 {n}\n" for n in range(10)})
    engine = Engine(str(root))
    engine.capture(session="s")
    edit_all(root, "v1")
    engine.capture(session="s", phase="after")
    fillers: list[Path] = []

    def durable_then_full(touched: object) -> None:
        real_make_durable(touched)
        fillers.append(fill(small_disk))  # the commit point's ref write comes next

    real_make_durable = undo_redo.make_durable
    monkeypatch.setattr(undo_redo, "make_durable", durable_then_full)
    with pytest.raises(RestoreFailed, match="could not roll back .*no space left on device"):
        engine.undo("s")
    monkeypatch.undo()
    fillers[0].unlink()

    assert [t.state for t in engine.list("s").turns] == ["active"]  # recovery runs first
    assert [(root / f"f{n}.txt").read_text() for n in range(10)] == [
        f"v1 {n}\n" * 40 for n in range(10)
    ]
    engine.close()


# Fails when a disk with some room left, but not enough for the new file's object, is
# reported as files changing ("try again when the writes have finished"): libgit2's
# GitError then carries an earlier call's message, and the disk is not at its last byte.
def test_a_nearly_full_disk_is_storage_failed(small_disk: Path):
    root = make_repo(small_disk / "repo", {"a.txt": "a\n"})
    assert run_cli(root, "capture", "--session", "s").returncode == 0
    write(root, "build.bin", os.urandom(600_000))
    filler = fill(small_disk, leave=100_000)
    done = run_cli(root, "capture", "--session", "s", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["data"]["reason"] == "storageFailed", error
    assert "No space left on device" in error["message"]
    filler.unlink()
    assert run_cli(root, "capture", "--session", "s").returncode == 0


# Fails when a plain folder's first capture, with its shadow repository's data folder on a
# full disk, is an internal error (exit 3) rather than `storageFailed`.
def test_a_shadow_repository_on_a_full_disk_is_storage_failed(small_disk: Path, tmp_path: Path):
    folder = tmp_path / "plain"
    write(folder, "a.txt", "a\n")
    filler = fill(small_disk)
    data = {**SERVER_ENV, "TURNBACK_DATA_DIR": str(small_disk / "data")}
    done = run_cli(folder, "capture", "--json", env=data)
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"]["data"]["reason"] == "storageFailed"
    filler.unlink()
    assert run_cli(folder, "capture", env=data).returncode == 0
