"""Where a work tree's daemon lives, found without pygit2 (a hook must start fast).

For a git work tree: `<git dir>/turnback/daemon/` (a linked worktree's own git
dir, so every work tree has its own daemon). For a plain folder: the shadow
repository's home, as `repository.py` computes it. The daemon checks that the
engine agrees before it listens, so a disagreement never serves the wrong tree.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import __version__
from ..core.discovery import looked_in

#: The daemon's private directory under turnback's state directory (mode 0700).
DAEMON_DIR = "daemon"
#: The socket's name carries the version: a client talks only to a daemon of its own
#: version. An older daemon left running after an upgrade served the new CLI and hooks
#: with the old code; unheard from, it now exits when idle, and the next hook starts a
#: new one (meanwhile, hooks capture in their own process).
SOCKET_NAME = f"sock-{__version__}"
DATA_DIR_ENV = "TURNBACK_DATA_DIR"  # the same variable as repository.DATA_DIR_ENV
#: sockaddr_un holds 108 bytes; longer socket paths go through /proc/self/fd.
_SUN_PATH_MAX = 100


class Location:
    """A work tree (or plain folder) and its daemon's files (no dataclass: a hook's import)."""

    __slots__ = ("root", "state_dir")

    def __init__(self, root: str, state_dir: str) -> None:
        self.root = root
        self.state_dir = state_dir

    @property
    def dir(self) -> str:
        return os.path.join(self.state_dir, DAEMON_DIR)

    @property
    def socket(self) -> str:
        return os.path.join(self.dir, SOCKET_NAME)

    @property
    def lock(self) -> str:
        return os.path.join(self.dir, "lock")

    @property
    def log(self) -> str:
        return os.path.join(self.dir, "log")


def find_git_dir(start: str) -> tuple[str, str] | None:
    """(work tree root, git dir) of the work tree holding `start`, as git finds them."""
    for folder in looked_in(Path(os.path.realpath(start))):
        path = str(folder)
        dot = os.path.join(path, ".git")
        if os.path.isdir(dot) and os.path.isfile(os.path.join(dot, "HEAD")):
            return path, dot
        if os.path.isfile(dot):  # a linked worktree or a submodule: "gitdir: <path>"
            try:
                with open(dot, encoding="utf-8") as file:
                    line = file.readline().strip()
            except (OSError, UnicodeDecodeError):
                line = ""
            if line.startswith("gitdir:"):
                target = os.path.join(path, line[len("gitdir:") :].strip())
                return path, os.path.realpath(target)
    return None


def data_dir() -> str:
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return configured
    import platformdirs  # light (pure Python), and only plain folders need it

    return platformdirs.user_data_dir("turnback")


def locate(folder: str) -> Location | None:
    """The daemon location for `folder`, or None when it is not a directory."""
    if not os.path.isdir(folder):
        return None
    found = find_git_dir(folder)
    if found is not None:
        root, git_dir = found
        return Location(root, os.path.join(git_dir, "turnback"))
    import hashlib  # only plain folders need it

    plain = os.path.realpath(folder)
    key = hashlib.sha256(plain.encode(errors="surrogateescape")).hexdigest()[:16]
    name = os.path.basename(plain) or "root"
    return Location(plain, os.path.join(data_dir(), "shadows", f"{name}-{key}"))


def socket_address(path: str, dir_fd: int) -> str:
    """`path` itself, or the same socket through `dir_fd` when it is too long to bind."""
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    return f"/proc/self/fd/{dir_fd}/{os.path.basename(path)}"
