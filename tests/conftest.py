"""Shared fixtures: real git repositories in tmp_path and the real server process.

Every server runs with HOME and XDG_CONFIG_HOME pointing at empty folders, so
no test depends on (or proves anything with) a git identity configured on the
machine, and the turnback data directory is private to the test run.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from turnback.lsp.pygls_internals import keep_responses_plain

_HOME = Path(tempfile.mkdtemp(prefix="turnback-test-home-"))
DATA_DIR = Path(tempfile.mkdtemp(prefix="turnback-test-data-"))

#: The environment of every turnback process a test starts: no git identity, private data.
SERVER_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "HOME": str(_HOME),
    "XDG_CONFIG_HOME": str(_HOME / ".config"),
    "TURNBACK_DATA_DIR": str(DATA_DIR),
    "GIT_CONFIG_NOSYSTEM": "1",
    # A CLI capture would otherwise start a background daemon that outlives the test;
    # tests/test_daemon.py turns it on where it is the subject.
    "TURNBACK_DAEMON": "off",
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


def git_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The git CLI, its exit status and output left to the caller."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False
    )


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = git_run(cwd, *args)
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


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command(), server_env=SERVER_ENV)
)
async def client(lsp_client: LanguageClient, repo: Path):
    """The real server over stdio, with `repo` as its only workspace folder."""
    await open_session(lsp_client, repo)
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


async def capture(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/capture", params)


async def undo(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/undo", params)


async def redo(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/redo", params)


async def list_turns(client: LanguageClient, **params) -> dict:
    return await request(client, "snapshot/list", params)


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


def run_cli(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60, **popen: Any
) -> subprocess.CompletedProcess:
    """`turnback <args>` in `root`: another process sharing the server's storage."""
    return subprocess.run(
        [sys.executable, "-m", "turnback", *args],
        cwd=root,
        env=SERVER_ENV if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **popen,
    )


def cli_json(root: Path, *args: str) -> dict:
    done = run_cli(root, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def tree_state(root: Path) -> dict[str, tuple]:
    """Every file and symlink under `root` (outside `.git`): link target, or bytes and exec bit.

    Directories are implied by their contents; git snapshots cannot hold empty ones.
    """
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                state[rel] = ("link", os.readlink(full))
            elif not stat.S_ISDIR(st.st_mode):
                state[rel] = ("file", full.read_bytes(), bool(st.st_mode & stat.S_IXUSR))
    return state
