"""Shared fixtures: real git repositories in tmp_path and the real server process.

Every server runs with HOME and XDG_CONFIG_HOME pointing at empty folders, so
no test depends on (or proves anything with) a git identity configured on the
machine, and the turnback data directory is private to the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

_HOME = Path(tempfile.mkdtemp(prefix="turnback-test-home-"))
DATA_DIR = Path(tempfile.mkdtemp(prefix="turnback-test-data-"))

#: The environment of every turnback process a test starts: no git identity, private data.
SERVER_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "HOME": str(_HOME),
    "XDG_CONFIG_HOME": str(_HOME / ".config"),
    "TURNBACK_DATA_DIR": str(DATA_DIR),
    "GIT_CONFIG_NOSYSTEM": "1",
}
#: The git CLI in tests: an identity through the environment only.
GIT_ENV = {
    **SERVER_ENV,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}
os.environ["TURNBACK_DATA_DIR"] = str(DATA_DIR)  # for in-process engine tests


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, content in (files or {"README.md": "hello\n", "src/app.py": "print('v1')\n"}).items():
        write(root, rel, content)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit: README.md, src/app.py and a .gitignore."""
    return make_repo(
        tmp_path / "repo",
        {"README.md": "hello\n", "src/app.py": "print('v1')\n", ".gitignore": "ignored/\n*.log\n"},
    )


def install_client_handlers(lsp_client: LanguageClient) -> None:
    """What a real editor answers: lens refreshes (counted) and timeline notifications."""
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


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command(), server_env=SERVER_ENV)
)
async def client(lsp_client: LanguageClient, repo: Path):
    """The real server over stdio, with `repo` as its only workspace folder."""
    install_client_handlers(lsp_client)
    await lsp_client.initialize_session(initialize_params(repo))
    yield lsp_client
    await lsp_client.shutdown_session()


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
