"""Making a restore's writes durable before it is declared done.

Git objects and refs are fsynced by libgit2 (`enable_git_fsync`, which
`open_workspace` calls before any repository is used). Work-tree files are
written by rename without an fsync at write time; the writer records what it
changed (`Touched`), and `make_durable` fsyncs exactly those files and the
directories whose entries changed (renames, creates, deletes) before the
timeline's commit point. So a power loss can never leave a committed restore
whose files are still only in the page cache, and the cost follows the files
the restore wrote, never the unrelated data other programs left dirty in the
same file system (a flush of the whole file system, `syncfs`, waited for an
agent's build output too).
This is also the portable path: Windows cannot fsync a directory, so
directories are skipped there; macOS gets `F_FULLFSYNC`, its real flush.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

import pygit2
from pygit2.enums import Option

_WINDOWS = os.name == "nt"
_git_fsync_enabled = False


def enable_git_fsync() -> None:
    """Makes libgit2 fsync every object, pack and ref it writes (process-wide, once)."""
    global _git_fsync_enabled
    if not _git_fsync_enabled:
        pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)
        _git_fsync_enabled = True


@dataclass
class Touched:
    """What a restore changed on disk: files it wrote, directories whose entries changed."""

    files: set[Path] = field(default_factory=set)
    dirs: set[Path] = field(default_factory=set)

    def wrote(self, path: Path) -> None:
        """A file (or symlink) renamed into place: its bytes and its directory entry."""
        self.files.add(path)
        self.dirs.add(path.parent)

    def changed_entries_of(self, folder: Path) -> None:
        """A name created, removed or replaced in `folder`."""
        self.dirs.add(folder)


def make_durable(touched: Touched) -> None:
    """Flushes the files and directory entries a restore changed to stable storage: the
    files side by side, then the directories (a journaling file system commits flushes
    that wait together in one go: 48 files and their folders took 14.5 ms one after the
    other and 6.8 ms eight at a time on this machine's ext4, bench/README.md)."""
    groups = [sorted(touched.files)]
    if not _WINDOWS:
        groups.append(sorted(touched.dirs, key=lambda p: -len(p.parts)))
    flushed = True
    for directory, paths in enumerate(groups):
        flushed = all(_flush_all(paths, directory=bool(directory))) and flushed
    if not flushed:
        # A path that cannot be opened or fsynced (a directory the user made
        # unreadable, say): flush everything rather than leave it unflushed.
        _flush_everything()


#: How many flushes wait side by side (beyond a few, the journal's commits merge anyway).
FLUSHES_AT_ONCE = 8
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
T = TypeVar("T")
R = TypeVar("R")


def side_by_side(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`work` of each item, on the flushing threads when there are a few: file system
    calls that wait on the disk, which a journal serves together. Every call has ended
    when this returns or raises (the first exception, once all are done)."""
    if len(items) < 3:
        return [work(item) for item in items]
    futures = [_flusher().submit(work, item) for item in items]
    try:
        wait(futures)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM in the CLI): what has not started never does, and
        # what runs ends first, so that the caller's clean-up sees every file made.
        for future in futures:
            future.cancel()
        wait(futures)
        raise
    return [future.result() for future in futures]


def _flush_all(paths: list[Path], *, directory: bool) -> list[bool]:
    return side_by_side(partial(_flush_path, directory=directory), paths)


def _flusher() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(FLUSHES_AT_ONCE, thread_name_prefix="turnback-flush")
        return _pool


def _forget_flusher() -> None:
    """A forked child has none of its parent's threads: it starts a pool of its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_flusher)


_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO)


def _flush_path(path: Path, *, directory: bool) -> bool:
    """Fsyncs `path`; False when it could not be flushed (and still exists)."""
    flags = os.O_RDONLY if not _WINDOWS else os.O_RDWR | getattr(os, "O_BINARY", 0)
    if not directory:
        # Never block on a FIFO a user put there since; never follow a symlink (a
        # symlink's own target is made durable with its directory's entry).
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        # Gone or replaced since (by the user): nothing of the restore's is left there.
        return error.errno in _GONE
    try:
        flush_fd(fd)
    except OSError as error:
        return error.errno == errno.EINVAL  # a special file the user put there since
    finally:
        os.close(fd)
    return True


def _flush_everything() -> None:
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()


def flush_fd(fd: int) -> None:
    """fsync, or macOS's real flush."""
    if sys.platform == "darwin":
        import fcntl

        try:
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)  # macOS's fsync leaves the drive's cache
            return
        except OSError:
            pass  # a file system without it: the plain fsync below
    os.fsync(fd)
