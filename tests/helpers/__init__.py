"""What the tests share: real git repositories, files, the real server and the real CLI.

Import from here (`from helpers import git, make_repo, run_cli`); the submodules hold one
concern each: env (the isolated environment), git, files, cli, lsp, objects
(what the object database holds on disk), waiting (a condition with a deadline). The pytest fixtures
built on them (`repo`, `client`) are in tests/conftest.py.
"""

from .cli import cli_json, cli_syscalls, python_as_user, run_cli, without_root_overrides
from .env import DATA_DIR, GIT_ENV, SERVER_ENV
from .files import read, tree_state, write
from .git import git, git_run, make_repo
from .lsp import (
    SERVER_CONFIG,
    capture,
    edit_unsaved,
    initialize_params,
    install_client_handlers,
    list_turns,
    open_document,
    open_session,
    redo,
    request,
    server_command,
    start_server,
    to_plain,
    undo,
)
from .objects import listed_packs, loose_objects, pack_names
from .waiting import wait_for

__all__ = [
    "DATA_DIR",
    "GIT_ENV",
    "SERVER_CONFIG",
    "SERVER_ENV",
    "capture",
    "cli_json",
    "cli_syscalls",
    "edit_unsaved",
    "git",
    "git_run",
    "initialize_params",
    "install_client_handlers",
    "list_turns",
    "listed_packs",
    "loose_objects",
    "make_repo",
    "open_document",
    "open_session",
    "pack_names",
    "read",
    "redo",
    "request",
    "run_cli",
    "server_command",
    "start_server",
    "to_plain",
    "tree_state",
    "undo",
    "wait_for",
    "python_as_user",
    "without_root_overrides",
    "write",
]
