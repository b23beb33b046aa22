"""Restores that fail midway roll back, and forced restores never lose what they overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from conftest import git, read, request, write


# Ensures a restore that fails midway puts back what it had written and reports restoreFailed.
async def test_failed_restore_rolls_back(client, repo: Path):
    write(repo, "data", "tracked file\n")
    git(repo, "add", "data")
    git(repo, "commit", "-q", "-m", "data")
    await request(client, "snapshot/capture", {"label": "turn"})
    write(repo, "README.md", "agent readme\n")
    (repo / "data").unlink()
    # The turn turns `data` into a directory holding an ignored file, which undo must not
    # delete: so `data` cannot become a file again, after README.md was already written.
    write(repo, "data/cache.log", "ignored, never touched\n")
    write(repo, "data/notes.txt", "agent notes\n")
    await request(client, "snapshot/capture", {"phase": "after"})

    with pytest.raises(JsonRpcException) as failure:
        await request(client, "snapshot/undo")
    assert failure.value.code == -32803
    data = json.loads(json.dumps(failure.value.data, default=lambda o: o._asdict()))
    assert data["reason"] == "restoreFailed"
    assert data["rolledBack"] is True and data["path"] == "data"
    assert read(repo, "README.md") == "agent readme\n"
    assert read(repo, "data/notes.txt") == "agent notes\n"
    assert read(repo, "data/cache.log") == "ignored, never touched\n"
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

    timeline = json.loads(git(repo, "show", "refs/turnback/main/sessions/default:timeline.json"))
    assert timeline["rescued"], "the overwritten state must be kept"
    saved = git(repo, "show", f"{timeline['rescued'][-1]['commit']}:src/app.py")
    assert saved == "print('mine, after the undo')\n"
