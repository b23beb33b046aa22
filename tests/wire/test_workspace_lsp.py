"""The real server on a folder of repositories: one turn across them, code lenses on a
file inside a nested repository, undo and redo with workspace-relative paths."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from helpers import (
    capture,
    list_turns,
    make_repo,
    redo,
    request,
    start_server,
    to_plain,
    tree_state,
    undo,
    write,
)
from helpers.workspace import repo_git_state, two_repo_folder

LENS_TITLES = ["Agent turn 1", "Undo turn", "Revert hunk", "Show diff"]


async def lenses_of(client, root: Path, rel: str) -> list[types.CodeLens]:
    """Opens `rel` in the editor and asks for its code lenses."""
    uri = (root / rel).as_uri()
    item = types.TextDocumentItem(uri, "python", 1, (root / rel).read_text())
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await asyncio.wait_for(client.text_document_code_lens_async(params), 10) or [])


# Ensures a server whose workspace folder holds two repositories captures, lists, diffs,
# undoes and redoes one turn across both, and shows lenses on a file inside `api`.
async def test_server_on_a_folder_of_repositories(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    write(ws, "api/main.py", "".join(f"line {i}\n" for i in range(1, 6)))
    before = tree_state(ws)
    async with start_server(ws) as client:
        turn = await capture(client, label="across")
        assert [r["path"] for r in turn["repositories"]] == ["api", "web"]
        write(ws, "api/main.py", "".join(f"line {i}\n" for i in range(1, 6)).replace("3", "x"))
        write(ws, "web/index.js", "web v2\n")
        await capture(client, phase="after")
        after = tree_state(ws)
        git_after = {r: repo_git_state(ws / r) for r in ("api", "web")}

        lenses = await lenses_of(client, ws, "api/main.py")
        assert [lens.command.title for lens in lenses] == LENS_TITLES
        assert lenses[0].range.start.line == 2

        listing = await list_turns(client)
        assert listing["workTree"] == ws.as_uri()
        assert listing["turns"][0]["repositories"] == turn["repositories"]
        diff = await request(client, "snapshot/diff", {"path": "api"})
        assert [f["path"] for f in diff["files"]] == ["api/main.py"]

        result = await undo(client)
        assert sorted(f["path"] for f in result["files"]) == ["api/main.py", "web/index.js"]
        assert tree_state(ws) == before
        await redo(client)
        assert tree_state(ws) == after
        assert {r: repo_git_state(ws / r) for r in ("api", "web")} == git_after


# Ensures a workspace folder deleted while the server has it open is answered noWorkspace
# and never recreated: the server used to write `.git/turnback` back into the deleted
# folder within seconds, and call the objects it lost missing (advising a prune). Named
# by its URI (as VS Code sends it), it was "Invalid parameter 'workspace'".
async def test_deleted_workspace_folder_is_not_recreated(tmp_path: Path):
    root = make_repo(tmp_path / "gone", {"a.txt": "1\n"})
    async with start_server(root) as client:
        await request(client, "snapshot/capture", {})
        for _ in range(20):  # as `rm -rf` again would: the capture's cache write may race it
            shutil.rmtree(root, ignore_errors=True)
            if not root.exists():
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.5)  # the timeline watcher looks every second
        for method in ("snapshot/list", "snapshot/undo", "snapshot/capture"):
            for params in ({}, {"workspace": root.as_uri()}):  # as VS Code sends it
                with pytest.raises(JsonRpcException) as refused:
                    await request(client, method, params)
                assert to_plain(refused.value.data) == {"reason": "noWorkspace"}, method
                assert "no longer exists" in refused.value.message, refused.value.message
        assert not root.exists()
    assert not root.exists()
