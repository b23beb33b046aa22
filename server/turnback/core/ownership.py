"""What a process run as root makes in someone else's folder, given to that folder's owner.

A dev container over a bind-mounted project, or `sudo turnback`, runs as root: every object
folder, ref folder and file of `.git/turnback` it created was root's, so the repository's
owner could no longer add an object that fell in such a folder (`git add`: "insufficient
permission"), pack refs, or run turnback at all (its lock); files an undo brought back and
hook configs it installed were root's too. Run as root, turnback gives what it makes to the
owner of the folder it makes it in (the repository's git directory, the file's folder).
Under any other user nothing changes: a process can only give files away as root.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

Owner = tuple[int, int]


def owner_to_give_to(folder: Path) -> Owner | None:
    """`folder`'s owner and group when this process runs as root and the owner is another
    user; else None (nothing to give)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def give(path: Path | str, owner: Owner | None) -> None:
    """Gives `path` itself (never a symlink's target) to `owner`, if any."""
    if owner is not None:
        with contextlib.suppress(OSError):
            os.chown(path, *owner, follow_symlinks=False)


def give_like(path: Path | str, replaced: os.stat_result) -> None:
    """Gives `path`, about to replace a file, that file's owner when run as root."""
    if hasattr(os, "geteuid") and os.geteuid() == 0 and replaced.st_uid != 0:
        give(path, (replaced.st_uid, replaced.st_gid))


def give_new(path: Path | str, folder: Path | str) -> None:
    """Gives `path`, just made in `folder`, to `folder`'s owner when run as root."""
    give(path, owner_to_give_to(Path(folder)))


def give_back(paths: list[Path], owner: Owner | None) -> None:
    """Gives each of `paths`, and what lies below it, that root owns to `owner`: what this
    process made there. Others' files stay theirs."""
    if owner is None:
        return
    for top in paths:
        _give_below(top, owner, None)


#: A folder changed this close before the last pass is looked into again (coarse clocks).
SINCE_MARGIN_NS = 3_000_000_000


def give_back_objects(objects_dir: Path, owner: Owner | None, since_ns: int) -> None:
    """`give_back` of an object database: its folders, and the objects in those changed
    since `since_ns` (a new object changes its folder's mtime). Every loose object each
    time cost an operation run as root ~65 ms at 10k of them."""
    if owner is None:
        return
    try:
        folders = list(os.scandir(objects_dir))
    except OSError:
        return
    for folder in folders:
        try:
            st = folder.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid == 0:
            give(folder.path, owner)
        if folder.is_dir(follow_symlinks=False) and st.st_mtime_ns >= since_ns - SINCE_MARGIN_NS:
            _give_below(Path(folder.path), owner, 1)


def _give_below(path: Path, owner: Owner, depth: int | None) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if st.st_uid == 0:
        give(path, owner)
    if depth == 0 or not os.path.isdir(path) or os.path.islink(path):
        return
    try:
        children = [Path(entry.path) for entry in os.scandir(path)]
    except OSError:
        return
    for child in children:
        _give_below(child, owner, None if depth is None else depth - 1)
