"""Keeps a long-lived process's memory near what it holds: pack windows, the object
cache and the C heap.

Pack windows. libgit2 maps a pack in windows of 1 GiB and keeps up to 8 GiB of them
mapped (its 64-bit defaults), and every page a read touched stays in the process's
resident set for as long as the window is mapped (the kernel also maps the pages around
a fault). Reading the ~1,800 trees of a 100k-file repository, spread through its 310 MB
pack, so left 64 MiB of the pack resident after the first capture and 135 MiB after a
few full scans, for the server's whole life (bench/profile_rss.py). Small windows under
a small limit are unmapped least-recently-used: the pages stay in the page cache, only
the mapping goes, so a later read costs a page fault, not a disk read. The limit was 32
MiB until the benchmark session's peak at 100k went over 150 MiB (below); at 16 MiB it
was 145, and no figure of the session was slower.

The object cache. libgit2 keeps every tree and commit it parses (up to 4 KiB each) in a
cache of 256 MiB by default, and evicts nothing below that. Each turn reads the trees the
turn before wrote, which are never needed again: over 500 turns of 10 files at 100k the
cache grew 4 MiB per 100 turns and the process 10 MiB (bench/profile_rss.py, its long
session). Bounded, it stays flat. The bound is global (libgit2 evicts from whichever
handle stores next once all handles together hold more), and a session reaches it (4 MiB
after a first capture at 100k files, 9 MiB after the server's first watcher captures,
the bound later on), so all of it stays resident. The benchmark session's peak was 166
MiB at 16 MiB, 149 at 8 and 136 at 4 (bench/README.md, seventh session). The cost is
small: a 1,000-file undo looks up 3,000 paths in whole snapshots, which took 168 ms of
its 2.6 s at 4 MiB against 35 ms at 16 (cProfile).

The C heap (glibc only; nothing elsewhere). The server runs each request on a pool
thread, and glibc gives threads arenas of their own: a 100k-entry index loaded on one
thread and freed on another leaves its pages in the first arena. With two arenas the
server's RSS after the benchmark's captures fell from 178-181 to 153-154 MiB. Pages
freed below the heap's top stay resident until `malloc_trim` returns them: the server
calls it after each request, which took the benchmark session's end from 171 to 154 MiB
once the object cache was bounded (well under a millisecond each time). A trim after the
stat cache's held write too (cachewrite.py, which runs after the answer) was tried and
dropped: beside the next request, it made a 1,000-file undo on linux's tree ~450 ms slower
(1,506-1,561 against 1,088 ms over LSP), and alone it left the peak at 151-160 MiB.

Large blocks. glibc maps a block of 128 KiB or more on its own, and unmaps it when it is
freed, but each such block freed raises that threshold to its size (up to 32 MiB): after
the first index file's buffers, blocks of several MiB come from the arenas, where what a
thread frees beside another's allocations stays resident. Once the stat cache's write ran
after the answer, beside the next request, the benchmark session's peak at 100k rose
from 148 to 149-166 MiB over six runs (157 against 148 in two runs alternated); with the
threshold held at 1 MiB, 148-155 over three.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

import pygit2

#: Bytes per mapped window, and all windows mapped at once (libgit2: 1 GiB and 8 GiB).
WINDOW = 4 * 2**20
MAPPED_LIMIT = 16 * 2**20
#: Bytes of parsed trees and commits libgit2 keeps for reuse (its default: 256 MiB).
OBJECT_CACHE = 4 * 2**20
#: glibc's mallopt parameter for the number of arenas, and the count a server keeps.
_M_ARENA_MAX = -8
SERVER_ARENAS = 2
#: glibc's mallopt parameter for the size from which a block is its own mapping, and the
#: size a server keeps (glibc's starts at 128 KiB and rises with each such block freed).
_M_MMAP_THRESHOLD = -3
SERVER_MMAP_THRESHOLD = 1 << 20


def bound_libgit2_memory() -> None:
    """Applies the limits to the process's libgit2 (global settings; idempotent):
    `open_workspace` calls it before turnback reads any object."""
    if pygit2.settings.mwindow_size != WINDOW:
        pygit2.settings.mwindow_size = WINDOW
    if pygit2.settings.mwindow_mapped_limit != MAPPED_LIMIT:
        pygit2.settings.mwindow_mapped_limit = MAPPED_LIMIT
    if pygit2.settings.cached_memory[1] != OBJECT_CACHE:
        pygit2.settings.cache_max_size(OBJECT_CACHE)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") else None


def tune_heap() -> None:
    """Few malloc arenas, and large blocks mapped on their own, for a long-lived
    multi-threaded process (before its threads start)."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, SERVER_ARENAS)
        libc.mallopt(_M_MMAP_THRESHOLD, SERVER_MMAP_THRESHOLD)


def return_free_heap() -> None:
    """Gives the C heap's free pages back to the system (glibc's `malloc_trim`, under a
    millisecond at 100k files): what a request freed is not kept for the next one."""
    libc = _glibc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
