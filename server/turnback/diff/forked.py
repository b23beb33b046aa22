"""The line diffs of a large turn on two cores: a forked child diffs part of the files.

difflib is pure Python, so threads do not run two diffs at once, and a 50-file turn of
2,000 lines each costs ~90 ms of text diff alone. A child made by `fork` already holds
the blobs the server read (shared, copy-on-write: nothing is copied or sent to it), diffs
the last files while the server diffs the first, and sends its results back pickled
through a pipe. A worker process kept alive would cost its own interpreter's memory all
the time; this child exists for the length of one diff and writes only what it makes.

Only on Linux: elsewhere `fork` in a process with threads is unsafe or missing (macOS's
system libraries, Windows). Only with two CPUs or more, and only for enough text to pay
for the fork (a few ms). The child touches no lock, no libgit2 handle and no stream of
the server: it runs `diff_file` on bytes it already has, writes to its pipe and leaves
with `os._exit`. Whatever goes wrong with it (no fork, a crash, a garbled or late
answer), the server diffs the child's files itself: the result never depends on it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.native import portable_mode
from ..results import FileDiff

#: Below this much text in all (both sides of every file), the diffs run in the server:
#: a fork costs ~8 ms in a 200 MB server, and 4 MiB of text ~40 ms of diff.
FORK_FROM_BYTES = 4 << 20
#: Text per round: the child's part is read before the fork and held until it runs.
ROUND_BYTES = 32 << 20
#: The child's part of the bytes: a little more than half, as the server reads its own
#: files after the fork (the child's are read before it), which costs a third of their
#: diff (in process at 10k, against a half: 143 against 155 ms, 15 samples, twice).
CHILD_SHARE = 0.56
#: How long the server waits for the child once its own share is done, at least: the
#: child's share is about as large, so five times as long as the server's own means stuck.
CHILD_GRACE = 2.0

#: A file's diff, ready to run: its bytes are read.
Job = Callable[[], FileDiff]


@dataclass(frozen=True)
class Share:
    """One file's diff still to compute: its size (both sides, for the split) and how to
    read its bytes, which gives the job that diffs them."""

    size: int
    load: Callable[[], Job]

    def diff(self) -> FileDiff:
        return self.load()()


def diff_all(shares: Sequence[Share]) -> list[FileDiff]:
    """Every share's diff, in order: in rounds of at most ROUND_BYTES, each with its last
    files in a forked child when it pays. The server reads its own files one at a time."""
    results: list[FileDiff] = []
    start, size = 0, 0
    for end, share in enumerate(shares, 1):
        size += share.size
        if size >= ROUND_BYTES or end == len(shares):
            results += _diff_round(shares[start:end], size)
            start, size = end, 0
    return results


def _diff_round(shares: Sequence[Share], total: int) -> list[FileDiff]:
    split = _split_at(shares, total)
    if split is None:
        return [share.diff() for share in shares]
    child = _fork_for([share.load() for share in shares[split:]])  # their bytes let go here
    started = time.monotonic()
    mine = [share.diff() for share in shares[:split]]
    grace = max(CHILD_GRACE, 5 * (time.monotonic() - started))
    theirs = _collect(child, len(shares) - split, grace) if child is not None else None
    if theirs is None:
        theirs = [share.diff() for share in shares[split:]]
    return mine + theirs


def can_fork() -> bool:
    """Linux with 2+ CPUs, unless `TURNBACK_PORTABLE` asks for the other systems' path."""
    linux = sys.platform.startswith("linux") and not portable_mode()
    return linux and hasattr(os, "fork") and _cpus() >= 2


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _split_at(shares: Sequence[Share], total: int) -> int | None:
    """Where the child's part starts (CHILD_SHARE of the bytes), or None to diff in one."""
    if total < FORK_FROM_BYTES or len(shares) < 2 or not can_fork():
        return None
    done = 0
    for i, share in enumerate(shares):
        done += share.size
        if done >= total * (1 - CHILD_SHARE):
            return min(i + 1, len(shares) - 1)
    return len(shares) - 1


@dataclass
class _Child:
    pid: int
    pipe: int


def _fork_for(jobs: list[Job]) -> _Child | None:
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in a process with threads; the child runs
            # no thread's code and takes no lock (module docstring).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child_main(jobs, write_end)
    os.close(write_end)
    return _Child(pid, read_end)


def _child_main(jobs: list[Job], pipe: int) -> None:
    code = 1
    try:
        # A collection would touch every object of the server, copying its pages.
        gc.disable()
        data = pickle.dumps([job() for job in jobs], pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(pipe, view) :]
        code = 0
    finally:
        os._exit(code)


def _collect(child: _Child, count: int, grace: float) -> list[FileDiff] | None:
    """The child's results, or None (then the server diffs its files itself)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + grace
    poller = select.poll()  # not select(): a server may hold descriptors above 1024
    poller.register(child.pipe, select.POLLIN)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                os.kill(child.pid, signal.SIGKILL)
                return None
            chunk = os.read(child.pipe, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(child.pipe)
        _reap(child.pid)
    try:
        results = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child that died mid-write: diff its files here
        return None
    if not isinstance(results, list) or len(results) != count:
        return None
    if not all(isinstance(result, FileDiff) for result in results):
        return None
    return results


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # reaped by someone else already
        os.waitpid(pid, 0)
