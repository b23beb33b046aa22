"""LSP clients that are not VS Code: what Emacs (eglot), Neovim 0.10+ and Helix announce
and how they hold files, against the real server."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from helpers import SERVER_CONFIG, install_client_handlers, make_repo, request, write
from wire.test_codelens import code_lenses, execute, install_apply_edit


def client_capabilities(*, utf8: bool = False, document_changes: bool = True):
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    if utf8:  # Neovim 0.10+ and Helix offer UTF-8 first; pygls takes the first offered
        caps.general = types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16]
        )
    caps.workspace.workspace_edit.document_changes = document_changes
    return caps


async def start(
    root: Path, root_uri: str | None = None, folders: bool = True, **caps: bool
) -> LanguageClient:
    """The real server, initialized as a client with these capabilities would."""
    config: ClientServerConfig = SERVER_CONFIG
    client = await config.start()
    install_client_handlers(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(**caps),
            root_uri=root_uri or root.as_uri(),
            workspace_folders=(
                [types.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if folders else None
            ),
        )
    )
    return client


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


def open_text(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="text", version=version, text=text
            )
        )
    )
    return path.as_uri()


def change_text(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def agent_rewrites(client: LanguageClient, repo: Path, rel: str, text: str) -> str:
    """A turn that rewrites `rel` as `text`, opened in the editor as such; its URI."""
    await request(client, "snapshot/capture", {"label": "turn"})
    write(repo, rel, text)
    return open_text(client, repo / rel, text)


async def revert_lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    return [lens for lens in await code_lenses(client, uri) if "Revert" in lens.command.title]


def applied(text: str, edit: types.TextEdit, encoding: str = "utf-16-le") -> str:
    """`edit` applied to `text` (lines end at `\\n`), its columns counted in `encoding`."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        width = 2 if encoding == "utf-16-le" else 1
        body = lines[position.line].encode(encoding)[: position.character * width]
        return sum(len(line) + 1 for line in lines[: position.line]) + len(body.decode(encoding))

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


# Ensures an editor holding a CRLF file with a BOM as LF text without it (Emacs, which
# converts both ways) gets a lens on the changed line alone, a hunk revert that puts back
# that line as the editor holds it, and no "unsaved changes" refusal for a buffer edited
# back to the file: one hunk covered the whole file, the revert put `\r\r\n` and a second
# BOM in the saved file, and the undo was refused.
async def test_an_editor_holding_crlf_and_bom_as_lf(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"f.txt": "\ufeffline 1\r\nline 2\r\nline 3\r\n"})
    client = await start(repo)
    try:
        received = install_apply_edit(client)
        await request(client, "snapshot/capture", {"label": "turn"})
        write(repo, "f.txt", "\ufeffline 1\r\nagent 2\r\nline 3\r\n")
        held = "line 1\nagent 2\nline 3\n"
        uri = open_text(client, repo / "f.txt", held)
        reverts = await revert_lenses(client, uri)
        assert [lens.range.start.line for lens in reverts] == [1]
        assert (await execute(client, reverts[0]))["applied"] is True
        [edit] = received[0].edit.document_changes[0].edits
        assert applied(held, edit) == "line 1\nline 2\nline 3\n"

        change_text(client, uri, "line 1\nsomething\nline 3\n", 2)
        change_text(client, uri, held, 3)  # typed, then typed back: like the file again
        undone = await request(client, "snapshot/undo")
        assert undone["turnsUndone"] == 1
    finally:
        await stop(client)


# Ensures a hunk revert's columns are counted in the position encoding the client chose:
# with UTF-8 (Neovim 0.10+, Helix) the end of a last line without a newline was counted
# in UTF-16, and the revert left a tail of the agent's line in the buffer.
async def test_revert_hunk_columns_in_utf8(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"f.txt": "one\nlast 🎉 é"})
    client = await start(repo, utf8=True)
    try:
        received = install_apply_edit(client)
        agent = "one\nlast 🎉 éagent"
        uri = await agent_rewrites(client, repo, "f.txt", agent)
        [revert] = await revert_lenses(client, uri)
        assert (await execute(client, revert))["applied"] is True
        [edit] = received[0].edit.document_changes[0].edits
        assert applied(agent, edit, "utf-8") == "one\nlast 🎉 é"
    finally:
        await stop(client)


# Ensures a client that does not announce `documentChanges` gets the revert as `changes`,
# which it can apply (LSP lets a server use documentChanges only when announced).
async def test_revert_hunk_as_changes_for_a_client_without_document_changes(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"f.txt": "a\nb\n"})
    client = await start(repo, document_changes=False)
    try:
        received = install_apply_edit(client)
        uri = await agent_rewrites(client, repo, "f.txt", "a\nB\n")
        [revert] = await revert_lenses(client, uri)
        assert (await execute(client, revert))["applied"] is True
        edit = received[0].edit
        assert edit.document_changes is None
        [text_edit] = edit.changes[uri]
        assert applied("a\nB\n", text_edit) == "a\nb\n"
    finally:
        await stop(client)


# Ensures a root URI with a host of `localhost` (RFC 8089), and no workspace folders, names
# the folder: pygls read it as /localhost/abs, and every request failed with noWorkspace.
async def test_root_uri_with_localhost(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    client = await start(repo, root_uri=f"file://localhost{repo}", folders=False)
    try:
        listing = await request(client, "snapshot/list")
        assert listing["workTree"] == repo.as_uri()
    finally:
        await stop(client)


# Ensures the CRLF and BOM conversion is assumed only where the file on disk shows it: a
# turn that changed a file's line endings to LF, or took its BOM away, keeps its lenses
# (the editor's LF text is the file's own), and a VS Code user's switch of a CRLF buffer
# to LF, not yet saved, is an unsaved change an undo refuses to overwrite.
async def test_line_ending_changes_are_changes(tmp_path: Path):
    repo = make_repo(
        tmp_path / "repo",
        {"lf.txt": "one\r\ntwo\r\n", "bom.txt": "\ufeffhello\n", "f.txt": "a\r\n", "g.txt": "g\n"},
    )
    client = await start(repo)
    try:
        await request(client, "snapshot/capture", {"label": "turn"})
        write(repo, "lf.txt", "one\ntwo\n")
        write(repo, "bom.txt", "hello\n")
        write(repo, "f.txt", "agent\r\n")
        write(repo, "g.txt", "\ufeffg\r\n")
        await request(client, "snapshot/capture", {"phase": "after"})
        for name, text in (("lf.txt", "one\ntwo\n"), ("bom.txt", "hello\n")):
            uri = open_text(client, repo / name, text)
            assert await code_lenses(client, uri), name

        for name, held in (("f.txt", "agent\r\n"), ("g.txt", "g\r\n")):
            uri = open_text(client, repo / name, held)  # VS Code keeps CRLF, drops the BOM
            change_text(client, uri, held.replace("\r\n", "\n"), 2)  # a switch to LF, unsaved
            with pytest.raises(JsonRpcException) as refused:
                await request(client, "snapshot/undo")
            assert name in str(refused.value.data)
            client.text_document_did_close(
                types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
            )
    finally:
        await stop(client)
