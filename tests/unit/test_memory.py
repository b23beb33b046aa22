"""The long-lived process's memory limits: libgit2's object cache and the C heap."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo
from turnback.core import memory
from turnback.core.repository import open_workspace


def _anonymous_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


# Ensures opening a workspace bounds libgit2's object cache, so a long session stays flat.
def test_opening_a_workspace_bounds_the_object_cache(tmp_path: Path):
    pygit2.settings.cache_max_size(256 * 2**20)
    make_repo(tmp_path, {"a.txt": "a\n"})
    open_workspace(tmp_path)
    assert pygit2.settings.cached_memory[1] == memory.OBJECT_CACHE


# Ensures heap pages freed below a live allocation go back to the system (glibc keeps
# them otherwise: only the heap's top is trimmed on free).
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc only")
def test_free_heap_pages_are_returned(tmp_path: Path):
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "malloc_trim"):
        pytest.skip("not glibc")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 60 * 1024  # below the mmap threshold: from the heap
    blocks = [libc.malloc(size) for _ in range(641)]  # ~37 MiB
    for block in blocks:
        ctypes.memset(block, 1, size)
    *freed, pin = blocks  # the last keeps the freed ones below the heap's top
    for block in freed:
        libc.free(block)
    before = _anonymous_kib()
    memory.return_free_heap()
    after = _anonymous_kib()
    libc.free(pin)
    assert before - after > 20 * 1024, (before, after)


_MALLINFO2_FIELDS = [
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
]
_LARGE_BLOCK_AFTER_A_LARGER_ONE = f"""
import ctypes
from turnback.core import memory

memory.tune_heap()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in {_MALLINFO2_FIELDS!r}]

libc.mallinfo2.restype = Info
libc.free(libc.malloc(8 << 20))  # glibc's own threshold rises to 8 MiB here
block = libc.malloc(2 << 20)
mapped = libc.mallinfo2().hblks
libc.free(block)
print(mapped - libc.mallinfo2().hblks)
"""


# Ensures a block of a MiB or more stays a mapping of its own in a server, unmapped when
# freed: glibc's threshold otherwise rises to the largest block freed, and such blocks (an
# index file's buffers) then come from the arenas and stay resident there (the benchmark
# server's peak at 100k rose from 148 to 157 MiB once the stat cache's write ran after
# the answer, beside the next request).
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_blocks_stay_mappings_of_their_own():
    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("glibc before 2.33")
    done = subprocess.run(
        [sys.executable, "-c", _LARGE_BLOCK_AFTER_A_LARGER_ONE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
