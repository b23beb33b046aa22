"""Undo and redo while ≥ 1 GiB of unrelated data is still dirty in the page cache.

Just before each timed undo, 1 GiB of unrelated data is written with plain writes (no
fsync) into the same file system (bench/.repos/dirty-ballast), as an agent's build or
`npm install` leaves it; /proc/meminfo's `Dirty:` is recorded right before the undo to
show it is still unwritten. Two durability methods are timed, interleaved sample by
sample in the same run: turnback's (fsync the files written and the directories
changed) and the one it replaced (one `syncfs` of the file system, installed for the
"syncfs" samples in place of `make_durable`, exactly as turnback called it before).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import turnback.restore.undo_redo as undo_redo
from turnback.core.durability import Touched

BALLAST_BYTES = int(os.environ.get("BENCH_DIRTY_MIB", "1024")) << 20
CHUNK = 8 << 20
UNDO_FILES = 10


def dirty_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Dirty:"):
            return int(line.split()[1])
    return -1


def write_ballast(folder: Path, name: str) -> None:
    """BALLAST_BYTES of plain writes into new files, never fsynced: dirty pages in the page
    cache. New files, not rewritten ones: ext4 starts writing back a file truncated and
    rewritten (auto_da_alloc), which would put the ballast in flight instead of dirty."""
    folder.mkdir(parents=True, exist_ok=True)
    # 128 MiB files in 8 MiB writes; a ballast below 128 MiB (the smoke test's) is one file.
    per_file = min(128 << 20, BALLAST_BYTES)
    chunk = min(CHUNK, per_file)
    block = os.urandom(chunk)
    for index in range(max(1, BALLAST_BYTES // per_file)):
        with open(folder / f"{name}-{index}.o", "xb") as handle:
            for _ in range(per_file // chunk):
                handle.write(block)


@contextlib.contextmanager
def syncfs_durability(root: Path) -> Iterator[None]:
    """The durability turnback used before: one syncfs of the whole file system."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)

    def make_durable_by_syncfs(_touched: Touched) -> None:
        fd = os.open(root, os.O_RDONLY)
        try:
            if libc.syncfs(fd) != 0:
                os.sync()
        finally:
            os.close(fd)

    original = undo_redo.make_durable
    undo_redo.make_durable = make_durable_by_syncfs
    try:
        yield
    finally:
        undo_redo.make_durable = original


@contextlib.contextmanager
def timed_durability(spent: list[float]) -> Iterator[None]:
    """Records the time spent in whichever `make_durable` is installed."""
    inner = undo_redo.make_durable

    def make_durable_timed(touched: Touched) -> None:
        start = time.perf_counter()
        try:
            inner(touched)
        finally:
            spent.append(time.perf_counter() - start)

    undo_redo.make_durable = make_durable_timed
    try:
        yield
    finally:
        undo_redo.make_durable = inner


def kernel_floor(folder: Path) -> float:
    """The least any durable write costs: one 4 KiB file written to a temporary name,
    renamed into place, fsynced with its directory (no turnback code involved)."""
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    temp = folder / "floor.tmp"
    with open(temp, "wb") as handle:
        handle.write(b"x" * 4096)
    os.replace(temp, folder / "floor.txt")
    for path in (folder / "floor.txt", folder):
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    return time.perf_counter() - start


def fresh_ballast(folder: Path, name: str) -> None:
    """Deletes the last ballast (its dirty pages are dropped, never written) and writes
    a new one: each timed operation follows exactly BALLAST_BYTES of new dirty data."""
    shutil.rmtree(folder, ignore_errors=True)
    write_ballast(folder, name)


def dirty_undo_block(bench: Any, engine: Any, options: Any, repeat: int) -> None:
    """Times a 10-file undo and redo with 1 GiB dirty, by both durability methods."""
    ballast = bench.work.parent / "dirty-ballast"
    paths = bench.undo_pool[:UNDO_FILES]
    dirty_seen: list[int] = []
    bench.mark_load("undo.dirty")
    for measured in [False] + [True] * repeat:
        for method in ("files", "syncfs"):
            engine.capture(label=f"turn {bench.tag}")
            bench.mutate(paths)
            engine.capture(phase="after")
            os.sync()  # start each sample from a clean page cache: only the ballast is dirty
            fresh_ballast(ballast, "undo")
            dirty_seen.append(dirty_kib())
            spent: list[float] = []
            installed = (
                syncfs_durability(bench.work) if method == "syncfs" else contextlib.nullcontext()
            )
            with installed, timed_durability(spent):
                start = time.perf_counter()
                undone = engine.undo(options=options)
                took_undo = time.perf_counter() - start
                fresh_ballast(ballast, "redo")
                start = time.perf_counter()
                redone = engine.redo(options=options)
                took_redo = time.perf_counter() - start
            assert len(undone.files) == UNDO_FILES == len(redone.files)
            if method == "files":
                fresh_ballast(ballast, "floor")
                floor = kernel_floor(bench.work.parent / "dirty-floor")
            shutil.rmtree(ballast)
            if measured:
                bench.add(f"undo.dirty_{method}_flush.{UNDO_FILES}", spent[0])
                bench.add(f"redo.dirty_{method}_flush.{UNDO_FILES}", spent[1])
                if method == "files":
                    bench.add("undo.dirty_kernel_floor", floor)
                bench.add(f"undo.dirty_{method}.{UNDO_FILES}", took_undo)
                bench.add(f"redo.dirty_{method}.{UNDO_FILES}", took_redo)
    shutil.rmtree(bench.work.parent / "dirty-floor", ignore_errors=True)
    bench.notes["dirtyUndo"] = {
        "ballastBytes": BALLAST_BYTES,
        "dirtyKiBBeforeUndo": dirty_seen,
        "fileSystemSameAsWorkTree": os.stat(ballast.parent).st_dev == os.stat(bench.work).st_dev,
    }
    bench.restore()
