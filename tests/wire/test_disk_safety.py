"""Disk safety: a capture stops at documented limits instead of snapshotting everything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import GIT_ENV, capture, git, list_turns, start_server, write


def _object_exists(repo: Path, content: bytes) -> bool:
    """Whether the object database holds a blob with exactly this content."""
    hashed = subprocess.run(
        ["git", "hash-object", "--stdin"],
        input=content,
        cwd=repo,
        env=GIT_ENV,
        capture_output=True,
        check=True,
    )
    oid = hashed.stdout.decode().strip()
    probe = subprocess.run(["git", "cat-file", "-e", oid], cwd=repo, env=GIT_ENV, check=False)
    return probe.returncode == 0


# Ensures a folder with more files than snapshotFileLimit is refused whole, with a clear reason.
async def test_too_many_files_stops_capture(tmp_path: Path):
    folder = tmp_path / "home-like"
    for i in range(300):
        write(folder, f"d{i % 7}/f{i}.txt", f"{i}\n")
    async with start_server(folder, snapshotFileLimit=100) as client:
        with pytest.raises(JsonRpcException) as refused:
            await capture(client, label="too much")
        assert refused.value.code == -32803
        assert refused.value.data["reason"] == "workspaceTooLarge"
        assert "snapshotFileLimit" in refused.value.message
        assert (await list_turns(client))["turns"] == []
    async with start_server(folder, snapshotFileLimit=1000) as client:
        assert (await capture(client, label="fits"))["turn"] == 1


# Ensures a capture over captureByteLimit writes none of the new content.
async def test_byte_limit_stops_capture_before_writing(repo: Path):
    big = b"x" * 5000 + b"\n"
    write(repo, "src/app.py", big)
    async with start_server(repo, captureByteLimit=1000) as client:
        with pytest.raises(JsonRpcException) as refused:
            await capture(client, label="big edit")
        assert refused.value.data["reason"] == "workspaceTooLarge"
        assert "captureByteLimit" in refused.value.message
    assert not _object_exists(repo, big)


# Ensures turnsPerSession bounds what old turns keep: pruned snapshots are freed by gc.
async def test_turns_per_session_bounds_storage(repo: Path):
    async with start_server(repo, turnsPerSession=3) as client:
        for n in range(5):
            write(repo, "src/app.py", f"print('state {n}')\n")
            await capture(client, label=f"t{n}")
        assert [t["label"] for t in (await list_turns(client))["turns"]] == ["t4", "t3", "t2"]
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert not _object_exists(repo, b"print('state 0')\n")
    assert _object_exists(repo, b"print('state 2')\n")
