"""Files in a work tree: write, read, and the whole tree as a comparable value."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


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
