"""The configuration files git's environment names, which libgit2 does not read.

git reads its global configuration from `GIT_CONFIG_GLOBAL` instead of `~/.gitconfig` and
`$XDG_CONFIG_HOME/git/config` when set, its system one from `GIT_CONFIG_SYSTEM`, and none
with `GIT_CONFIG_NOSYSTEM`; libgit2 knows none of them. With `GIT_CONFIG_GLOBAL` naming a
file that sets `core.excludesFile`, turnback captured the files git ignores (and deleted a
build's ignored output on undo); with `core.autocrlf` there, it kept a CRLF file's LF copy.
Each repository handle turnback opens reads the files git would. Nothing may write
configuration through such a handle: libgit2 writes to the file it ranks first, which
can be one of these (as root, a write meant for the repository once replaced /dev/null
with a file).
"""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import ConfigLevel

from .pygit2_internals import add_config_file


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def read_config_as_git_does(repo: pygit2.Repository) -> None:
    """Gives `repo` the global and system configuration git's environment names."""
    configured = os.environ.get("GIT_CONFIG_GLOBAL")
    if configured is not None:
        add_config_file(repo, configured or os.devnull, ConfigLevel.GLOBAL)
        add_config_file(repo, os.devnull, ConfigLevel.XDG)  # git reads neither then
    system = os.environ.get("GIT_CONFIG_SYSTEM")
    if _truthy(os.environ.get("GIT_CONFIG_NOSYSTEM")):
        add_config_file(repo, os.devnull, ConfigLevel.SYSTEM)
    elif system is not None:
        add_config_file(repo, system or os.devnull, ConfigLevel.SYSTEM)
