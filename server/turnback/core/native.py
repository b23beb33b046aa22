"""The Linux-only accelerations (inotify; a large diff's forked child, diff/forked.py) and
the switch that turns them off.

Everything else in turnback is portable. `TURNBACK_PORTABLE=1` makes every caller take
the path macOS and Windows take (full scans instead of a watcher, diffs in one process),
so the test suite exercises those paths on Linux too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys


def portable_mode() -> bool:
    return os.environ.get("TURNBACK_PORTABLE", "") not in ("", "0")


@functools.cache
def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def linux_libc() -> ctypes.CDLL | None:
    """The C library for inotify, or None where they must not be used."""
    return None if portable_mode() else _load_libc()


def filesystem_type(path: str) -> int | None:
    """The `f_type` magic number `statfs(2)` gives for `path`'s file system (Linux only)."""
    libc = linux_libc()
    if libc is None or not hasattr(libc, "statfs"):
        return None
    buffer = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF
