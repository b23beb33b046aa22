"""The real server over stdio under pytest-lsp: starting it, and the requests tests send."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from turnback.lsp.pygls_internals import keep_responses_plain

from .env import SERVER_ENV


def install_client_handlers(lsp_client: LanguageClient) -> None:
    """What a real editor answers: lens refreshes (counted) and timeline notifications.

    Custom responses stay plain JSON: pygls would make namedtuples that rename keys such
    as `odd-key`, `class` or `from`, and tests compare exact JSON.
    """
    keep_responses_plain(lsp_client.protocol)
    lsp_client.lens_refreshes = 0  # type: ignore[attr-defined]
    lsp_client.did_change = []  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(_params):
        lsp_client.lens_refreshes += 1  # type: ignore[attr-defined]
        return None

    @lsp_client.feature("snapshot/didChange")
    def _did_change(params):
        lsp_client.did_change.append(to_plain(params))  # type: ignore[attr-defined]


def server_command() -> list[str]:
    return [sys.executable, "-m", "turnback", "serve"]


def initialize_params(root: Path, **capabilities_overrides) -> types.InitializeParams:
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    return types.InitializeParams(
        capabilities=caps,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=capabilities_overrides.get("initialization_options"),
    )


SERVER_CONFIG = ClientServerConfig(server_command=server_command(), server_env=SERVER_ENV)


async def open_session(lsp_client: LanguageClient, root: Path, **settings) -> None:
    """Initializes a client on `root`, with settings as initializationOptions."""
    install_client_handlers(lsp_client)
    await lsp_client.initialize_session(
        initialize_params(root, initialization_options=settings or None)
    )


@asynccontextmanager
async def start_server(root: Path, **settings) -> AsyncIterator[LanguageClient]:
    """A fresh server process whose only workspace folder is `root`."""
    lsp_client = await SERVER_CONFIG.start()
    await open_session(lsp_client, root, **settings)
    try:
        yield lsp_client
    finally:
        await lsp_client.shutdown_session()
        await lsp_client.stop()


async def request(client: LanguageClient, method: str, params: dict | None = None):
    """A custom request; returns plain JSON (dicts and lists), raises JsonRpcException."""
    result = await client.protocol.send_request_async(method, params or {})
    return to_plain(result)


def to_plain(value):
    """pytest-lsp hands results back as namedtuples; tests compare plain JSON."""
    if hasattr(value, "_asdict"):
        return {k: to_plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value


async def capture(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/capture", params)


async def undo(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/undo", params)


async def redo(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/redo", params)


async def list_turns(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/list", params)


def open_document(client: LanguageClient, path: Path, text: str, language_id: str) -> str:
    """Opens `path` in the editor with `text` (version 1); returns its URI."""
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language_id, version=1, text=text
            )
        )
    )
    return uri


def edit_unsaved(client: LanguageClient, uri: str, text: str) -> None:
    """The user's unsaved edit: the whole document becomes `text` (version 2)."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
