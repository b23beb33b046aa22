"""Work-tree paths: which ones may ever be written, and a stamp that tells a path changed.

The writer, the recovery and the scanner all ask the same questions of a path; the answers
live here, below all of them.
"""

from __future__ import annotations

import os
from pathlib import Path


def holds_repository(folder: Path | str) -> bool:
    """Whether `folder` is a repository of its own (nested, or a submodule's checkout).

    Its `.git` may be a directory, a gitlink file or a symlink, even a dangling one: any of
    them makes git treat the folder as another repository's, so turnback leaves it alone.
    """
    return os.path.lexists(os.path.join(folder, ".git"))


def is_git_directory(folder: Path | str) -> bool:
    """Whether `folder` is itself a git directory (a bare repository, or the git directory
    of a work tree elsewhere, `--separate-git-dir`), by git's own test: `HEAD`, `objects/`
    and `refs/`. Its files are the repository's, never a work tree's to capture or write."""
    return (
        os.path.isfile(os.path.join(folder, "HEAD"))
        and os.path.isdir(os.path.join(folder, "objects"))
        and os.path.isdir(os.path.join(folder, "refs"))
    )


def under_real_dirs(root: Path | str, path: str) -> bool:
    """False when a parent of `path` is a symlink or not a directory: nothing of the work
    tree's is really at that path, and looking there would follow a link."""
    current = str(root)
    for part in path.split("/")[:-1]:
        current = os.path.join(current, part)
        if os.path.islink(current) or not os.path.isdir(current):
            return False
    return True


def in_work_tree(root: Path | str, path: str) -> bool:
    """Whether something of the work tree's own stands at `path` (no parent followed
    through a link)."""
    return under_real_dirs(root, path) and os.path.lexists(os.path.join(root, path))


#: lstat fields that change whenever a file is written or replaced (inode, size, mtime,
#: ctime, mode), and its link count.
Stamp = tuple[int, ...]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_nlink)


def stamp_at(path: Path | str) -> Stamp | None:
    """The stamp of what `path` names (links followed), None when nothing is there."""
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None


def same_stamp(then: object, now: object) -> bool:
    """Whether a file still has the stamp it had, when its ctime alone moved with its link
    count: another name of it was replaced or removed (a restore rewriting one of two hard
    links), which changes neither its bytes nor its mtime."""
    if then == now:
        return True
    if not (isinstance(then, tuple) and isinstance(now, tuple) and len(then) == len(now) == 6):
        return False
    return then[:3] == now[:3] and then[4] == now[4] and then[5] != now[5]


class UnsafePath(ValueError):
    """A path that must never be written: absolute, with `..`, into `.git`, or with NUL."""


def check_path(path: str) -> list[str]:
    if not path or "\0" in path or path.startswith("/") or (os.sep == "\\" and "\\" in path):
        raise UnsafePath(path)
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", "..") or part.lower() == ".git":
            raise UnsafePath(path)
    return parts


def folds_case(folder: Path) -> bool:
    """Whether the file system at `folder` takes names that differ only in letter case for
    one name (macOS and Windows by default, WSL's Windows drives, many shares), told
    without writing there: the first name in it with letters, its case swapped, names the
    same file; a file system that tells cases apart has no file by that name, or another."""
    listed = _names_in(folder)
    name = next((n for n in listed if n.swapcase() != n), None)
    if name is not None:
        real, swapped = folder / name, folder / name.swapcase()
    else:
        real, swapped = folder, folder.parent / folder.name.swapcase()
        listed = _names_in(folder.parent)
    if real == swapped:
        return False  # no letters to swap anywhere: as good as case-sensitive
    try:
        one, other = os.lstat(real), os.lstat(swapped)
    except OSError:
        return False
    # One file, or a spelling the folder does not list yet answers: exFAT through FUSE gives
    # each spelling an inode of its own, and was taken for a disk that tells cases apart.
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino) or swapped.name not in listed


def _names_in(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
