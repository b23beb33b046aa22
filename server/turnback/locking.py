"""A lock shared by every process acting on one repository (servers and the CLI).

fcntl locks die with their process, so a crash never leaves a stale lock behind.
A threading lock in front of it serialises the threads of one process, since
fcntl locks are per process, not per thread.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import Busy

#: Long enough for another process's restore of thousands of files, short enough to answer.
DEFAULT_LOCK_TIMEOUT = 30.0

_thread_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    with _registry_lock:
        return _thread_locks.setdefault(str(path), threading.Lock())


@contextmanager
def repository_lock(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Holds the lock file at `path` exclusively, or raises Busy after `timeout` seconds."""
    local = _thread_lock(path)
    if not local.acquire(timeout=timeout):
        raise Busy(f"Another operation on this repository is still running ({path})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise Busy(
                            "Another turnback process has held this repository's lock for "
                            f"{timeout:.0f} s ({path})"
                        ) from None
                    time.sleep(0.02)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        local.release()
