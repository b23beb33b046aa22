"""Object folders as git makes them in a shared repository (`core.sharedRepository`).

git makes each `objects/xx` folder it creates group-writable (or world-readable) there;
libgit2 makes it with the process's umask (2755 under umask 022), so another member of
the group could no longer add an object that falls in a folder turnback created. After
each operation, the object folders this user owns get the bits git would give them, and
so do the folders of turnback's own state and refs (`.git/turnback`, `refs/turnback`):
another member's capture writes there too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pygit2

_GROUP = ("group", "true", "1")
_ALL = ("all", "world", "everybody", "2")


def shared_folder_bits(repo: pygit2.Repository) -> int:
    """The permission bits git adds to a folder under `core.sharedRepository` (0: none)."""
    try:
        value = str(repo.config["core.sharedRepository"]).strip().lower()
    except (KeyError, ValueError, pygit2.GitError):
        return 0
    if value in _GROUP:
        return 0o070
    if value in _ALL:
        return 0o075
    if len(value) > 1 and value.startswith("0"):  # an octal mode, such as 0660
        try:
            mode = int(value, 8) & 0o777
        except ValueError:
            return 0
        return mode | ((mode & 0o444) >> 2)  # searchable wherever readable, as git does
    return 0


def share_object_folders(objects_dir: Path, bits: int) -> None:
    """Adds `bits` to the object folders this user owns that lack them (never removes any)."""
    if not bits or not hasattr(os, "geteuid"):
        return  # (Windows keeps no such bits: the setting means nothing there)
    try:
        folders = [e.path for e in os.scandir(objects_dir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for folder in folders:
        _share(folder, bits)


def share_folder_tree(top: Path, bits: int) -> None:
    """Adds `bits` to `top` and every folder below it that this user owns."""
    if not bits or not hasattr(os, "geteuid"):
        return
    for folder, _dirs, _files in os.walk(top):
        _share(folder, bits)


def _share(folder: str, bits: int) -> None:
    """Adds `bits` to `folder` if this user owns it and it lacks them."""
    try:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & bits != bits:
            os.chmod(folder, stat.S_IMODE(st.st_mode) | bits)
    except OSError:
        pass
