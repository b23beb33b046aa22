"""The real server on a folder of repositories: one turn across them, code lenses on a
file inside a nested repository, undo and redo with workspace-relative paths."""

from __future__ import annotations

from pathlib import Path

from conftest import capture, list_turns, redo, request, start_server, tree_state, undo, write
from test_codelens import LENS_TITLES, code_lenses, open_document
from workspace_support import repo_git_state, two_repo_folder


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

        uri = open_document(client, ws, "api/main.py")
        lenses = await code_lenses(client, uri)
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
