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

from .ownership import SINCE_MARGIN_NS

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


def share_object_folders(objects_dir: Path, bits: int, since_ns: int = 0) -> None:
    """Adds `bits` to the object folders this user owns that lack them (never removes any),
    and their read bits to the files this user owns in the folders changed since
    `since_ns` (a new object changes its folder's mtime): libgit2 makes an object or a pack
    0444 less the umask, where git lets a shared repository's group (or everyone) read it,
    and their git then failed on the turn's snapshot commit ("Permission denied")."""
    if not bits or not hasattr(os, "geteuid"):
        return  # (Windows keeps no such bits: the setting means nothing there)
    try:
        folders = [e for e in os.scandir(objects_dir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for folder in folders:
        _share(folder.path, bits)
        try:
            changed = folder.stat(follow_symlinks=False).st_mtime_ns >= since_ns - SINCE_MARGIN_NS
            files = [e.path for e in os.scandir(folder.path)] if changed else []
        except OSError:
            continue
        for path in files:
            _share_file(path, bits & 0o044)


def share_folder_tree(top: Path, bits: int) -> None:
    """Adds `bits` to `top` and every folder below it that this user owns."""
    if not bits or not hasattr(os, "geteuid"):
        return
    for folder, _dirs, _files in os.walk(top):
        _share(folder, bits)


def _share_file(path: str, readable: int) -> None:
    """Adds the `readable` bits to a regular file this user owns that lacks them."""
    try:
        st = os.lstat(path)
        if (
            stat.S_ISREG(st.st_mode)
            and st.st_uid == os.geteuid()
            and st.st_mode & readable != readable
        ):
            os.chmod(path, stat.S_IMODE(st.st_mode) | readable)
    except OSError:
        pass


def _share(folder: str, bits: int) -> None:
    """Adds `bits` to `folder` if this user owns it and it lacks them."""
    try:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & bits != bits:
            os.chmod(folder, stat.S_IMODE(st.st_mode) | bits)
    except OSError:
        pass
