"""Code lenses on the newest agent turn's hunks, and the commands they run."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from helpers import (
    SERVER_CONFIG,
    edit_unsaved,
    make_repo,
    open_document,
    open_session,
    read,
    request,
    start_server,
    to_plain,
    write,
)

TIMEOUT = 10
ORIGINAL = "".join(f"line {i}\n" for i in range(1, 9))
#: The agent's edit: line 2 replaced, line 7 replaced by two lines.
AGENT = ORIGINAL.replace("line 2\n", "agent two\n").replace("line 7\n", "agent 7a\nagent 7b\n")
LENS_TITLES = ["Agent turn 1", "Undo turn", "Revert hunk", "Show diff"]
LENS_COMMANDS = ["turnback.showDiff", "turnback.undo", "turnback.revertHunk", "turnback.showDiff"]


@pytest_lsp.fixture(config=SERVER_CONFIG)
async def no_lens_client(lsp_client: LanguageClient, repo: Path):
    """The server started with code lenses turned off."""
    await open_session(lsp_client, repo, codeLens=False)
    yield lsp_client
    await lsp_client.shutdown_session()


def install_apply_edit(client: LanguageClient) -> list:
    """Answers workspace/applyEdit like an editor that applies the edit; records the params."""
    received: list = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(params: types.ApplyWorkspaceEditParams):
        received.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    return received


async def agent_turn(client: LanguageClient, repo: Path, seal: bool = False) -> dict:
    """src/app.py holds ORIGINAL at the snapshot and AGENT after the turn."""
    write(repo, "src/app.py", ORIGINAL)
    turn = await request(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/app.py", AGENT)
    if seal:
        await request(client, "snapshot/capture", {"phase": "after"})
    return turn


def open_file(client: LanguageClient, repo: Path, rel: str) -> str:
    return open_document(client, repo / rel, read(repo, rel), "python")


async def code_lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    result = await asyncio.wait_for(
        client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    return list(result or [])


def arguments(lens: types.CodeLens) -> list:
    assert lens.command is not None
    return to_plain(list(lens.command.arguments or []))


def apply_text_edit(text: str, edit: types.TextEdit) -> str:
    """Applies one LSP TextEdit the way an editor does (lines end at `\n`, `\r\n` and a lone
    `\r` only; UTF-16 columns; end of line clamps)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        line = lines[position.line]
        body = line.rstrip("\r\n")
        units = body.encode("utf-16-le")[: position.character * 2].decode("utf-16-le")
        return sum(len(x) for x in lines[: position.line]) + len(units)

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


async def execute(client: LanguageClient, lens: types.CodeLens):
    assert lens.command is not None
    result = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=lens.command.command, arguments=arguments(lens))
        ),
        TIMEOUT,
    )
    return to_plain(result)


# ---- 15 lenses -------------------------------------------------------------------------------


# Ensures each changed hunk gets one group of four lenses on its line, sealed turn or not.
@pytest.mark.parametrize("seal", [False, True], ids=["unsealed", "sealed"])
async def test_lenses_on_changed_hunks(client, repo: Path, seal: bool):
    await agent_turn(client, repo, seal)
    uri = open_file(client, repo, "src/app.py")
    lenses = await code_lenses(client, uri)
    assert len(lenses) == 8
    groups = [lenses[:4], lenses[4:]]
    for group, line in zip(groups, (1, 6), strict=True):  # "agent two" and "agent 7a", 0-based
        assert [lens.range.start.line for lens in group] == [line] * 4
        assert [lens.command.title for lens in group] == LENS_TITLES
        assert [lens.command.command for lens in group] == LENS_COMMANDS
    revert = arguments(groups[1][2])[0]
    assert (revert["oldStart"], revert["oldLines"]) == (7, 1)
    assert (revert["newStart"], revert["newLines"]) == (7, 2)
    assert revert["uri"] == uri


# Ensures lenses follow the editor's unsaved text, not the file on disk.
async def test_lenses_follow_unsaved_document_text(client, repo: Path):
    await agent_turn(client, repo)
    uri = open_file(client, repo, "src/app.py")
    edit_unsaved(client, uri, "# new\n" + AGENT)
    lenses = await code_lenses(client, uri)
    lines = sorted({lens.range.start.line for lens in lenses})
    assert lines == [0, 2, 7]


# Ensures a file the newest turn did not change gets no lenses.
async def test_no_lenses_on_unchanged_file(client, repo: Path):
    await agent_turn(client, repo)
    uri = open_file(client, repo, "README.md")
    assert await code_lenses(client, uri) == []


# Ensures no lens claims the agent wrote what no snapshot holds while its turn is open (an
# ignored file the user has open, a file in .git), whose "Revert hunk" emptied the buffer;
# and that a lens request for a closed file that is gone answers no lenses, not -32603.
async def test_no_lenses_on_what_no_turn_holds(client, repo: Path):
    write(repo, "debug.log", "the user's own log\n")
    await agent_turn(client, repo)
    for rel in ("debug.log", ".git/HEAD"):
        uri = open_document(client, repo / rel, read(repo, rel), "plaintext")
        assert await code_lenses(client, uri) == [], rel
    gone = (repo / "src/app.py").as_uri()
    (repo / "src/app.py").unlink()
    assert await code_lenses(client, gone) == []


# Ensures the codeLens setting set to false turns lenses off.
async def test_code_lens_setting_false_gives_no_lenses(no_lens_client, repo: Path):
    client = no_lens_client
    await agent_turn(client, repo)
    uri = open_file(client, repo, "src/app.py")
    assert await code_lenses(client, uri) == []


# ---- 16 revert hunk ----------------------------------------------------------------------------


# Ensures "Revert hunk" sends workspace/applyEdit whose edit restores the snapshot's lines.
@pytest.mark.parametrize("which", [0, 1], ids=["first-hunk", "second-hunk"])
async def test_revert_hunk_applies_edit_restoring_lines(client, repo: Path, which: int):
    received = install_apply_edit(client)
    await agent_turn(client, repo)
    uri = open_file(client, repo, "src/app.py")
    lenses = await code_lenses(client, uri)
    revert = [lens for lens in lenses if lens.command.title == "Revert hunk"][which]
    result = await execute(client, revert)
    assert result["applied"] is True
    [params] = received
    [change] = params.edit.document_changes
    assert change.text_document.uri == uri
    [edit] = change.edits
    expected = [
        AGENT.replace("agent two\n", "line 2\n"),
        AGENT.replace("agent 7a\nagent 7b\n", "line 7\n"),
    ][which]
    assert apply_text_edit(AGENT, edit) == expected


REVERT_CASES = {
    "deleted-line": ("a\nb\nc\nd\n", "a\nb\nd\n"),
    "deleted-last-lines": ("a\nb\nc\n", "a\n"),
    "appended-line": ("a\nb\n", "a\nb\nagent tail\n"),
    "inserted-first-line": ("a\nb\n", "agent head\na\nb\n"),
    "changed-line-no-final-newline": ("a\nb\nc", "a\nB\nc"),
    "last-line-loses-newline": ("a\nb\nc\n", "a\nb\nC"),
    "deleted-last-line-no-final-newline": ("a\nb\nc", "a\nb"),
    "non-ascii": ("größe = 1\nemoji = '🙂'\n", "größe = 2\nemoji = '🙂'\n"),
    "file-added-by-agent": (None, "print('new')\n"),
    # Characters Python's splitlines ends lines at, LSP and the diff do not (or, a lone
    # `\r`, LSP does and the diff does not): the lines below them were shifted.
    "form-feed-above": ("x\n\f\ny\nz\nw\n", "x\n\f\ny\nz\nW\n"),
    "u2028-above": ("s = 'p\u2028q'\nb\nc\nd\n", "s = 'p\u2028q'\nb\nc\nD\n"),
    "lone-cr-above": ("a\rb\nc\nd\n", "a\rb\nc\nD\n"),
    "crlf": ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),
}


# Ensures reverting the only hunk of a change gives back exactly the snapshot's text.
async def test_revert_hunk_edge_cases(client, repo: Path):
    received = install_apply_edit(client)
    wrong = []
    for n, (case, (before, after)) in enumerate(REVERT_CASES.items()):
        rel = f"src/edge{n}.py"
        if before is not None:
            write(repo, rel, before)
        await request(client, "snapshot/capture", {"label": case})
        write(repo, rel, after)
        uri = open_document(client, repo / rel, after, "python")  # its bytes, \r kept
        lenses = await code_lenses(client, uri)
        reverts = [lens for lens in lenses if lens.command.title == "Revert hunk"]
        assert len(reverts) == 1, case
        received.clear()
        result = await execute(client, reverts[0])
        assert result["applied"] is True, case
        [edit] = received[0].edit.document_changes[0].edits
        if apply_text_edit(after, edit) != (before or ""):
            wrong.append((case, edit))
    assert wrong == []


# Ensures the lens on a file the agent renamed and edited reverts the edit, as the turn's
# diff pairs the two names (it took the file as new: one hunk that emptied the document).
async def test_revert_hunk_of_a_renamed_file(client, repo: Path):
    received = install_apply_edit(client)
    lines = "".join(f"line {i}\n" for i in range(20))
    write(repo, "old.txt", lines)
    await request(client, "snapshot/capture", {"label": "rename"})
    (repo / "old.txt").unlink()
    write(repo, "new.txt", lines.replace("line 10\n", "agent ten\n"))
    await request(client, "snapshot/capture", {"phase": "after"})
    uri = open_file(client, repo, "new.txt")
    [revert] = [
        lens for lens in await code_lenses(client, uri) if lens.command.title == "Revert hunk"
    ]
    assert (await execute(client, revert))["applied"] is True
    [edit] = received[0].edit.document_changes[0].edits
    assert apply_text_edit(read(repo, "new.txt"), edit) == lines


# Ensures a file that is not UTF-8 (Latin-1, shown by an editor set to that encoding) gets
# no lenses, and a hunk revert is refused with a reason: the lens sat on an unchanged line
# too, and "Revert hunk" put U+FFFD where the file had é (`caf? au lait` once saved).
async def test_no_hunk_lenses_or_reverts_in_a_file_that_is_not_utf8(client, repo: Path):
    received = install_apply_edit(client)
    write(repo, "legacy.txt", b"caf\xe9 au lait\nd\xe9j\xe0 vu\n")
    turn = await request(client, "snapshot/capture", {"label": "latin-1"})
    agent = b"caf\xe9 cr\xe8me\nd\xe9j\xe0 vu\n"
    write(repo, "legacy.txt", agent)
    await request(client, "snapshot/capture", {"phase": "after"})
    uri = open_document(client, repo / "legacy.txt", agent.decode("latin-1"), "plaintext")
    assert await code_lenses(client, uri) == []
    hunk = {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1}
    args = {"uri": uri, "turn": turn["id"], **hunk, "workspace": repo.as_uri()}
    result = to_plain(
        await asyncio.wait_for(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="turnback.revertHunk", arguments=[args])
            ),
            TIMEOUT,
        )
    )
    assert result["applied"] is False and "not UTF-8" in result["message"]
    assert received == [] and (repo / "legacy.txt").read_bytes() == agent


# Ensures a lens drawn for an older turn is refused once a newer turn changed the file,
# rather than putting back the newer turn's lines under the older turn's name.
async def test_revert_hunk_of_an_older_turn_is_refused(client, repo: Path):
    install_apply_edit(client)
    await agent_turn(client, repo, seal=True)
    uri = open_file(client, repo, "src/app.py")
    [first, *_] = [
        lens for lens in await code_lenses(client, uri) if lens.command.title == "Revert hunk"
    ]
    await request(client, "snapshot/capture", {"label": "t2"})
    write(repo, "src/app.py", AGENT.replace("agent two", "agent TWO"))
    result = await execute(client, first)
    assert result["applied"] is False and "out of date" in result["message"]


# Ensures a lens `turn` that is not a number or an id is refused: `true` equals 1 in Python,
# so it once passed for turn 1 and reverted the hunk. So are a `newStart` or `newLines` that
# are not counts, which were taken without a word.
@pytest.mark.parametrize(("field", "value"), [("turn", True), ("newStart", "x"), ("newLines", [])])
async def test_revert_hunk_refuses_a_turn_that_is_not_a_number_or_an_id(
    client, repo: Path, field: str, value: object
):
    received = install_apply_edit(client)
    await agent_turn(client, repo, seal=True)
    uri = open_file(client, repo, "src/app.py")
    [first, *_] = [
        lens for lens in await code_lenses(client, uri) if lens.command.title == "Revert hunk"
    ]
    [args] = arguments(first)
    with pytest.raises(JsonRpcException, match=field):
        await asyncio.wait_for(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="turnback.revertHunk", arguments=[{**args, field: value}]
                )
            ),
            TIMEOUT,
        )
    assert received == [] and (repo / "src/app.py").read_text() == AGENT


# ---- 17 undo turn ------------------------------------------------------------------------------


# Ensures the "Undo turn" lens command undoes the turn: the file on disk goes back.
async def test_undo_turn_lens_undoes_turn(client, repo: Path):
    turn = await agent_turn(client, repo)
    uri = open_file(client, repo, "src/app.py")
    lenses = await code_lenses(client, uri)
    undo = next(lens for lens in lenses if lens.command.title == "Undo turn")
    result = await execute(client, undo)
    assert result["turnsUndone"] == 1
    assert read(repo, "src/app.py") == ORIGINAL
    listing = await request(client, "snapshot/list")
    assert [(t["id"], t["state"]) for t in listing["turns"]] == [(turn["id"], "undone")]


# Ensures the "Show diff" lens command returns that file's diff for the turn.
async def test_show_diff_lens_returns_file_diff(client, repo: Path):
    turn = await agent_turn(client, repo)
    uri = open_file(client, repo, "src/app.py")
    show = [lens for lens in await code_lenses(client, uri) if lens.command.title == "Show diff"]
    result = await execute(client, show[0])
    assert result["turn"]["id"] == turn["id"]
    assert [f["path"] for f in result["files"]] == ["src/app.py"]


# ---- 18 refresh --------------------------------------------------------------------------------


# Ensures a timeline change makes the server ask the client to refresh its lenses.
async def test_timeline_change_requests_lens_refresh(client, repo: Path):
    await request(client, "snapshot/list")
    await asyncio.sleep(0.6)  # past one watcher poll: nothing changed yet
    assert client.lens_refreshes == 0
    await agent_turn(client, repo)
    for _ in range(50):
        if client.lens_refreshes > 0:
            break
        await asyncio.sleep(0.1)
    assert client.lens_refreshes > 0


# Ensures a document under a path its URI escapes (a space, an accent: VS Code escapes both)
# is the open document it is: its changes were dropped as "not open", so once the editor
# reloaded the agent's text it had no lenses, "Revert hunk" said it was not open, and undo
# refused for unsaved changes the editor did not have.
async def test_documents_under_a_path_the_uri_escapes(tmp_path: Path):
    repo = make_repo(tmp_path / "my project é", {"src/app.py": ORIGINAL})
    async with start_server(repo) as client:
        install_apply_edit(client)
        uri = open_file(client, repo, "src/app.py")
        assert "%20" in uri and "%C3%A9" in uri
        await agent_turn(client, repo, seal=True)
        edit_unsaved(client, uri, AGENT)  # the editor reloads what the agent wrote
        lenses = await code_lenses(client, uri)
        assert [lens.command.title for lens in lenses] == LENS_TITLES * 2
        revert = next(lens for lens in lenses if lens.command.title == "Revert hunk")
        assert (await execute(client, revert))["applied"] is True
        undone = await request(client, "snapshot/undo", {})
        assert undone["turnsUndone"] == 1
        assert read(repo, "src/app.py") == ORIGINAL
