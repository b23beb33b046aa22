"""The fixtures every folder shares: a real git repository in tmp_path and the real server.

Helpers (git, files, the CLI, the LSP client) are in tests/helpers; this file holds only
what pytest must find here: the fixtures, and the data directory of in-process engines.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from helpers import DATA_DIR, SERVER_ENV, make_repo, open_session, server_command
from turnback.core import specialfiles

os.environ["TURNBACK_DATA_DIR"] = str(DATA_DIR)  # for in-process engine tests


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit: README.md, src/app.py and a .gitignore."""
    return make_repo(
        tmp_path / "repo",
        {"README.md": "hello\n", "src/app.py": "print('v1')\n", ".gitignore": "ignored/\n*.log\n"},
    )


@pytest.fixture
def listings_trusted_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process engines trust a folder's listing as soon as it is taken: the tests age
    folders with `os.utime`, which moves their mtime back but their ctime to now, and a
    listing is otherwise trusted only two seconds after both (core/specialfiles.py)."""
    monkeypatch.setattr(specialfiles, "RACY_NS", 0)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command(), server_env=SERVER_ENV)
)
async def client(lsp_client: LanguageClient, repo: Path):
    """The real server over stdio, with `repo` as its only workspace folder."""
    await open_session(lsp_client, repo)
    yield lsp_client
    await lsp_client.shutdown_session()
