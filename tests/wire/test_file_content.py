"""The two requests a diff view needs: per-turn file lists and each side of a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import capture, list_turns, request, write


# Ensures list with includeFiles gives each turn the files it changed, with statuses.
async def test_list_include_files(client, repo: Path):
    await capture(client, label="one")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "notes.md", "new\n")
    (repo / "README.md").unlink()
    await capture(client, phase="after")
    await capture(client, label="two")
    write(repo, "notes.md", "newer\n")

    listing = await list_turns(client, includeFiles=True)
    two, one = listing["turns"]
    assert sorted((f["path"], f["status"]) for f in one["files"]) == [
        ("README.md", "deleted"),
        ("notes.md", "added"),
        ("src/app.py", "modified"),
    ]
    assert [(f["path"], f["status"]) for f in two["files"]] == [("notes.md", "modified")]
    assert "files" not in (await list_turns(client))["turns"][0]


# Ensures fileContent returns the before and after text of a turn's file, and absent sides.
async def test_file_content_sides(client, repo: Path):
    turn = await capture(client, label="one")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "bin.dat", b"\x00\x01binary")
    await capture(client, phase="after")
    write(repo, "src/app.py", "print('after the seal')\n")

    before = await request(
        client, "snapshot/fileContent", {"turn": 1, "path": "src/app.py", "side": "before"}
    )
    after = await request(
        client, "snapshot/fileContent", {"turn": turn["id"], "path": "src/app.py", "side": "after"}
    )
    assert (before["exists"], before["text"]) == (True, "print('v1')\n")
    assert after["text"] == "print('agent')\n"
    added = await request(
        client, "snapshot/fileContent", {"turn": 1, "path": "bin.dat", "side": "before"}
    )
    assert added["exists"] is False
    binary = await request(
        client, "snapshot/fileContent", {"turn": 1, "path": "bin.dat", "side": "after"}
    )
    assert (binary["exists"], binary["binary"], binary["text"]) == (True, True, "")


# Ensures fileContent rejects a missing turn or path, a bad side and a path outside the workspace.
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"path": "src/app.py"}, "turn"),
        ({"turn": 1}, "path"),
        ({"turn": 1, "path": "src/app.py", "side": "middle"}, "side"),
        ({"turn": 1, "path": "../outside"}, "path"),
        ({"turn": 9, "path": "src/app.py"}, "turn"),
        ({"turn": 1, "path": "."}, "path"),  # the work tree's folder: was "not there"
    ],
)
async def test_file_content_bad_params(client, repo: Path, params: dict, field: str):
    await capture(client, label="one")
    with pytest.raises(JsonRpcException) as error:
        await request(client, "snapshot/fileContent", params)
    assert error.value.code == -32602
    assert field in error.value.message
