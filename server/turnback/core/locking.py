"""A lock shared by every process acting on one repository (servers and the CLI).

An OS lock on an open file (flock on POSIX, msvcrt.locking on Windows) dies with its
process, so a crash never leaves a stale lock behind; a lock *file* that merely exists
(what portable "soft" locks do) would. flock locks belong to the open file description and
every call opens the lock file anew, so threads exclude each other through it as processes
do; the threading lock in front makes a process's own threads wait on each other by blocking
instead of retrying the file every 20 ms, and gives them the same timeout.

filelock (4.2, evaluated) takes the same OS locks but falls back to a soft lock on file
systems without flock and would add a dependency to the wheel the VS Code extension
carries; these few lines are all turnback needs, so they stay.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import Busy, Cancelled

#: Long enough for another process's restore of thousands of files, short enough to answer.
DEFAULT_LOCK_TIMEOUT = 30.0
#: How often a lock another holds is tried again (and a cancel asked for).
_POLL = 0.02

try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # Windows: lock the file's first byte
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


_thread_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    with _registry_lock:
        return _thread_locks.setdefault(str(path), threading.Lock())


@contextmanager
def repository_lock(
    path: Path,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[None]:
    """Holds the lock file at `path` exclusively, or raises Busy after `timeout` seconds,
    or Cancelled as soon as `cancelled` says so while waiting (a capture the user
    cancelled waited the whole 30 s for another process, then answered busy)."""
    local = _thread_lock(path)
    deadline = time.monotonic() + timeout
    while not local.acquire(timeout=_POLL if cancelled is not None else timeout):
        if cancelled is None or time.monotonic() > deadline:
            raise Busy(f"Another operation on this repository is still running ({path})")
        if cancelled():
            raise Cancelled()
    try:
        fd = _open_lock_file(path)
        if fd is None:
            yield  # no one can take it: a folder nobody may write, and nothing to guard yet
            return
        try:
            deadline = time.monotonic() + timeout
            while not _try_lock(fd):
                if time.monotonic() > deadline:
                    raise Busy(
                        "Another turnback process has held this repository's lock for "
                        f"{timeout:.0f} s ({path})"
                    )
                if cancelled is not None and cancelled():
                    raise Cancelled()
                time.sleep(_POLL)
            try:
                yield
            finally:
                _unlock(fd)
        finally:
            os.close(fd)
    finally:
        local.release()


def _open_lock_file(path: Path) -> int | None:
    """The lock file, made if missing (read-write for whoever the umask lets: a shared
    repository's group, sharedperms.py). Where it may not be written (a read-only `.git`,
    another user's repository read under `safe.directory`) it is opened read-only, which
    flock takes all the same, so reading commands still work; None when it is not there
    and cannot be made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError:
            raise error from None


def wait_until_free(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
    """Returns once no one holds the lock at `path` (taking it for an instant): background
    work yields the disk to an operation without holding the operation up."""
    with repository_lock(path, timeout):
        pass
